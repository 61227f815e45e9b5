"""The tools of the suite's 2025-11-25 asking scenarios (`tools-call-sampling`,
`tools-call-elicitation`, `elicitation-sep1034-defaults`,
`elicitation-sep1330-enums`): each sends one request to the client and
reports its answer."""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types

from .asking import elicit, need, sample, sampled_text
from .base import text_result
from .registry import string_properties, tool


async def elicit_and_report(message: str, schema: dict[str, Any], prefix: str) -> types.CallToolResult:
    """Asks `message` with the form `schema`, then reports the action and content."""
    need("elicitation")
    result = await elicit(message, schema)
    return text_result(f"{prefix}: action={result.action}, content={json.dumps(result.content or {})}")


@tool("test_sampling", "Tests server-initiated sampling (LLM completion request)", string_properties("prompt"))
async def test_sampling(arguments: dict[str, Any]) -> types.CallToolResult:
    need("sampling")
    result = await sample(str(arguments.get("prompt", "")), 100)
    return text_result(f"LLM response: {sampled_text(result)}")


@tool("test_elicitation", "Tests server-initiated elicitation (user input request)", string_properties("message"))
async def test_elicitation(arguments: dict[str, Any]) -> types.CallToolResult:
    schema = {
        "type": "object",
        "properties": {"response": {"type": "string", "description": "User's response"}},
        "required": ["response"],
    }
    return await elicit_and_report(str(arguments.get("message", "")), schema, "User response")


@tool("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034")
async def test_elicitation_sep1034_defaults(_: dict[str, Any]) -> types.CallToolResult:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "required": [],
    }
    return await elicit_and_report(
        "Please review and update the form fields with defaults", schema, "Elicitation completed"
    )


@tool("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330")
async def test_elicitation_sep1330_enums(_: dict[str, Any]) -> types.CallToolResult:
    options = ["option1", "option2", "option3"]
    titled = [{"const": f"value{n}", "title": title} for n, title in ((1, "First"), (2, "Second"), (3, "Third"))]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Select one option", "enum": options},
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [{**choice, "title": f"{choice['title']} Option"} for choice in titled],
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": options},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {"anyOf": [{**choice, "title": f"{choice['title']} Choice"} for choice in titled]},
            },
        },
        "required": [],
    }
    return await elicit_and_report("Please select options from the enum fields", schema, "Elicitation completed")
