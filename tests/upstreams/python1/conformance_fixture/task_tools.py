"""The tasks extension's tools (the suite's `tasks-*` scenarios) as an
ordinary server has them, with no task support of its own: `greet`,
`slow_compute`, `failing_job`, `protocol_error_job`, and the asking
`confirm_delete`, `multi_input` and `test_tool_with_task`."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import anyio
import mcp.types as types
from mcp.shared.exceptions import McpError

from .asking import answer_json, ask, content_value, elicit, form, need
from .base import log, progress_token, send_progress, text_result
from .registry import string_properties, tool

#: Interval between two progress notifications of `slow_compute`.
PROGRESS_INTERVAL = 0.2
#: How long `failing_job` runs by default before its `isError` result.
FAILING_JOB_DEFAULT = 1.0
#: How long `test_tool_with_task` works once it has the name.
TEST_TOOL_WITH_TASK_DELAY = 1.5

SECONDS_SCHEMA = {"type": "number", "minimum": 0, "description": "Seconds to run"}
#: An input schema with only the optional `seconds`.
SECONDS_ONLY = {"type": "object", "properties": {"seconds": SECONDS_SCHEMA}}


@tool("greet", "Answers `Hello, {name}!` at once.", string_properties("name"))
async def greet(arguments: dict[str, Any]) -> types.CallToolResult:
    return text_result(f"Hello, {arguments.get('name', '')}!")


@tool(
    "slow_compute",
    "Sleeps `seconds`; sends notifications/progress every 200 ms when given a progressToken.",
    {
        "type": "object",
        "properties": {"seconds": SECONDS_SCHEMA, "label": {"type": "string"}},
        "required": ["seconds"],
    },
)
async def slow_compute(arguments: dict[str, Any]) -> types.CallToolResult:
    seconds = float(arguments.get("seconds", 0))
    label = str(arguments.get("label", "slow_compute"))
    token = progress_token()
    tag = f"label={label} seconds={seconds:g}"
    log.info("slow_compute started %s", tag)
    try:
        start = time.monotonic()
        deadline = start + seconds
        while (now := time.monotonic()) < deadline:
            await anyio.sleep(min(PROGRESS_INTERVAL, deadline - now))
            elapsed = time.monotonic() - start
            if token is not None and elapsed < seconds:
                await send_progress(token, elapsed, seconds, f"{label}: {elapsed:.1f}s of {seconds:g}s")
    except anyio.get_cancelled_exc_class():
        log.info("slow_compute cancelled %s", tag)
        raise
    log.info("slow_compute finished %s", tag)
    return text_result(f"{label} done after {seconds:g}s")


@tool(
    "failing_job",
    "Runs about one second (or `seconds`), then returns a tool error (isError: true).",
    SECONDS_ONLY,
)
async def failing_job(arguments: dict[str, Any]) -> types.CallToolResult:
    await anyio.sleep(float(arguments.get("seconds", FAILING_JOB_DEFAULT)))
    return text_result("failing_job failed on purpose", is_error=True)


@tool("protocol_error_job", "Answers a JSON-RPC error (-32603), after `seconds` (default 0).", SECONDS_ONLY)
async def protocol_error_job(arguments: dict[str, Any]) -> types.CallToolResult:
    await anyio.sleep(float(arguments.get("seconds", 0)))
    raise McpError(
        types.ErrorData(
            code=types.INTERNAL_ERROR,
            message="protocol_error_job failed on purpose",
            data={"tool": "protocol_error_job"},
        )
    )


@tool("confirm_delete", "Asks `confirm` (elicitation/create), then reports the answer.", string_properties("filename"))
async def confirm_delete(arguments: dict[str, Any]) -> types.CallToolResult:
    filename = str(arguments.get("filename", ""))
    answer = await ask(f"Delete {filename}?", confirm="boolean")
    accepted = answer.action == "accept" and content_value(answer, "confirm", None) is not False
    verdict = "Deleted" if accepted else "Kept"
    return text_result(f"{verdict} {filename} (answer: {json.dumps(answer_json(answer))})")


@tool("multi_input", "Asks `first` and `second` at once; completes when both are answered.")
async def multi_input(_: dict[str, Any]) -> types.CallToolResult:
    need("elicitation")
    first, second = await asyncio.gather(
        elicit("First value?", form(value="string")),
        elicit("Second value?", form(value="string")),
    )
    return text_result(
        f"multi_input done: first={json.dumps(answer_json(first))}, second={json.dumps(answer_json(second))}"
    )


@tool("test_tool_with_task", "Asks `name`, then works 1.5 s and greets the name.")
async def test_tool_with_task(_: dict[str, Any]) -> types.CallToolResult:
    answer = await ask("What is your name?", name="string")
    name = content_value(answer, "name", json.dumps(answer_json(answer)))
    await anyio.sleep(TEST_TOOL_WITH_TASK_DELAY)
    return text_result(f"Hello, {name}! test_tool_with_task finished")
