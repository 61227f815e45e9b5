"""The tools of the suite's MRTR scenarios (`input-required-result-*`):
where a 2026-07-28 server would answer `input_required`, each asks the
client with real requests in its session (see `asking`) and reports the
answers; questions asked together are sent at once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any

import mcp.types as types

from .asking import (
    answer_json,
    ask,
    content_value,
    declared,
    elicit,
    form,
    list_roots,
    need,
    sample,
    sampled_text,
)
from .base import text_result
from .registry import tool


@tool("test_input_required_result_elicitation", "Asks a name (elicitation/create), then greets it")
async def test_input_required_result_elicitation(_: dict[str, Any]) -> types.CallToolResult:
    answer = await ask("What is your name?", name="string")
    return text_result(f"Hello, {content_value(answer, 'name')}!")


@tool("test_input_required_result_sampling", "Asks a sampling/createMessage, then reports its text")
async def test_input_required_result_sampling(_: dict[str, Any]) -> types.CallToolResult:
    need("sampling")
    answer = await sample("What is the capital of France?", 100)
    return text_result(f"Sampling result: {sampled_text(answer)}")


@tool("test_input_required_result_list_roots", "Asks roots/list, then counts the roots")
async def test_input_required_result_list_roots(_: dict[str, Any]) -> types.CallToolResult:
    need("roots")
    answer = await list_roots()
    return text_result(f"Found {len(answer.roots)} root(s)")


@tool("test_input_required_result_request_state", "Asks a confirmation (ok: boolean), then reports it")
async def test_input_required_result_request_state(_: dict[str, Any]) -> types.CallToolResult:
    answer = await ask("Please confirm", ok="boolean")
    if answer.action == "accept" and content_value(answer, "ok", False) is True:
        return text_result("state-ok: the confirmation arrived in the same call")
    return text_result(f"not confirmed: {json.dumps(answer_json(answer))}")


@tool(
    "test_input_required_result_multiple_inputs",
    "Asks a name, a sampled greeting and the roots at once, then reports all three",
)
async def test_input_required_result_multiple_inputs(_: dict[str, Any]) -> types.CallToolResult:
    need("elicitation", "sampling", "roots")
    name, greeting, roots = await asyncio.gather(
        elicit("What is your name?", form(name="string")),
        sample("Generate a greeting", 50),
        list_roots(),
    )
    return text_result(
        f"Name: {content_value(name, 'name')}; Greeting: {sampled_text(greeting)}; Roots: {len(roots.roots)}"
    )


@tool("test_input_required_result_multi_round", "Asks a name, then a colour, one after the other")
async def test_input_required_result_multi_round(_: dict[str, Any]) -> types.CallToolResult:
    name = await ask("Step 1: What is your name?", name="string")
    color = await ask("Step 2: What is your favorite color?", color="string")
    return text_result(
        f"Multi-round complete for {content_value(name, 'name', 'friend')} who likes {content_value(color, 'color')}"
    )


@tool("test_input_required_result_tampered_state", "Asks a confirmation (ok: boolean), then reports it")
async def test_input_required_result_tampered_state(_: dict[str, Any]) -> types.CallToolResult:
    answer = await ask("Please confirm", ok="boolean")
    return text_result(f"integrity-ok: answered {json.dumps(answer_json(answer))}")


@tool(
    "test_input_required_result_capabilities",
    "Asks what the client declared: an elicitation and a sampling, each only if declared",
)
async def test_input_required_result_capabilities(_: dict[str, Any]) -> types.CallToolResult:
    asked: dict[str, Awaitable[Any]] = {}
    if declared("elicitation"):
        asked["elicit_input"] = elicit("Elicitation input", form(value="string"))
    if declared("sampling"):
        asked["sample_input"] = sample("Sample request", 50)
    if not asked:
        return text_result("No supported capabilities declared")
    answers = await asyncio.gather(*asked.values(), return_exceptions=True)
    received = [key for key, answer in zip(asked, answers) if not isinstance(answer, BaseException)]
    failed = {
        key: str(answer) for key, answer in zip(asked, answers) if isinstance(answer, BaseException)
    }
    return text_result(f"capabilities-ok: received {','.join(received)}; failed {json.dumps(failed)}")
