"""The tools of the suite's schema and 2026-07-28 diagnostic scenarios
(`json-schema-2020-12`, `server-stateless`, the SEP-2243 header scenarios,
list-changed subscriptions): a raw JSON Schema 2020-12 inputSchema, -32021
without sampling, a parameter annotated `x-mcp-header`, and the two
list-changed notifications."""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types
from mcp.shared.exceptions import McpError

from .asking import declared, missing_capability, sample, sampled_text
from .base import context, text_result
from .registry import tool

#: SEP-1613 / SEP-2106: a raw JSON Schema 2020-12 inputSchema, kept as written.
JSON_SCHEMA_2020_12_INPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@tool(
    "json_schema_2020_12_tool",
    "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    JSON_SCHEMA_2020_12_INPUT_SCHEMA,
)
async def json_schema_2020_12_tool(arguments: dict[str, Any]) -> types.CallToolResult:
    return text_result(f"JSON Schema 2020-12 tool called with: {json.dumps(arguments)}")


@tool("test_missing_capability", "Needs the client's sampling capability: -32021 without it")
async def test_missing_capability(_: dict[str, Any]) -> types.CallToolResult:
    if not declared("sampling"):
        raise missing_capability("sampling", "MissingRequiredClientCapabilityError: this tool needs sampling")
    try:
        result = await sample("Say anything", 10)
    except McpError as error:
        return text_result(f"sampling failed: {error.error.message}", is_error=True)
    return text_result(f"Success: {sampled_text(result)}")


@tool(
    "test_param_header",
    "Echoes `region`, a parameter clients of 2026-07-28 mirror in the Mcp-Param-Region header (x-mcp-header)",
    {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region", "description": "A region name"}},
        "required": ["region"],
    },
)
async def test_param_header(arguments: dict[str, Any]) -> types.CallToolResult:
    # A server of this generation knows nothing of Mcp-Param headers: it
    # only lists the annotation; whoever serves 2026-07-28 checks them.
    return text_result(f"region={arguments.get('region')}")


@tool("test_trigger_tool_change", "Sends notifications/tools/list_changed")
async def test_trigger_tool_change(_: dict[str, Any]) -> types.CallToolResult:
    await context().session.send_tool_list_changed()
    return text_result("Mutation triggered")


@tool("test_trigger_prompt_change", "Sends notifications/prompts/list_changed")
async def test_trigger_prompt_change(_: dict[str, Any]) -> types.CallToolResult:
    await context().session.send_prompt_list_changed()
    return text_result("Mutation triggered")
