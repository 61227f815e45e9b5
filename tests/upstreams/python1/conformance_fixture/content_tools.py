"""The tools of the suite's plain `tools-call-*` scenarios: fixed contents
(text, image, audio, embedded resources, a mix), an `isError` result,
progress notifications, log messages (with `logging/setLevel`) and a
progress notification before the result on the call's stream."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp.types as types

from .base import (
    SERVER_NAME,
    TEST_AUDIO_BASE64,
    context,
    embedded,
    progress_token,
    send_progress,
    server,
    test_image,
    text_result,
)
from .registry import tool


@tool("test_simple_text", "Tests simple text content response")
async def test_simple_text(_: dict[str, Any]) -> types.CallToolResult:
    return text_result("This is a simple text response for testing.")


@tool("test_image_content", "Tests image content response")
async def test_image_content(_: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[test_image()])


@tool("test_audio_content", "Tests audio content response")
async def test_audio_content(_: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.AudioContent(type="audio", data=TEST_AUDIO_BASE64, mimeType="audio/wav")]
    )


@tool("test_embedded_resource", "Tests embedded resource content response")
async def test_embedded_resource(_: dict[str, Any]) -> types.CallToolResult:
    resource = embedded("test://embedded-resource", "text/plain", "This is an embedded resource content.")
    return types.CallToolResult(content=[resource])


@tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)")
async def test_multiple_content_types(_: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text="Multiple content types test:"),
            test_image(),
            embedded(
                "test://mixed-content-resource", "application/json", json.dumps({"test": "data", "value": 123})
            ),
        ]
    )


@tool("test_error_handling", "Tests error response handling")
async def test_error_handling(_: dict[str, Any]) -> types.CallToolResult:
    raise RuntimeError("This tool intentionally returns an error for testing")


@tool("test_tool_with_progress", "Tests tool that reports progress notifications")
async def test_tool_with_progress(_: dict[str, Any]) -> types.CallToolResult:
    token = progress_token()
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await anyio.sleep(0.05)
        if token is not None:
            await send_progress(token, progress, 100, f"Completed step {progress} of 100")
    return text_result(str(token))


#: The level `logging/setLevel` set, if any (the session's client chose it).
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
log_level: str | None = None


async def send_log(level: types.LoggingLevel, data: Any) -> None:
    """A `notifications/message` on the call's stream, unless below the set level."""
    if log_level is not None and LEVELS.index(level) < LEVELS.index(log_level):
        return
    ctx = context()
    await ctx.session.send_log_message(level, data, logger=SERVER_NAME, related_request_id=ctx.request_id)


@server.set_logging_level()
async def set_logging_level(level: types.LoggingLevel) -> None:
    global log_level
    log_level = level


@tool("test_tool_with_logging", "Tests tool that emits log messages during execution")
async def test_tool_with_logging(_: dict[str, Any]) -> types.CallToolResult:
    await send_log("info", "Tool execution started")
    await anyio.sleep(0.05)
    await send_log("info", "Tool processing data")
    await anyio.sleep(0.05)
    await send_log("info", "Tool execution completed")
    return text_result("Tool with logging executed successfully")


@tool("test_logging_tool", "Logs one info message (notifications/message) during the call")
async def test_logging_tool(_: dict[str, Any]) -> types.CallToolResult:
    # A server of this generation logs as the session's logging/setLevel
    # allows (everything before one): no per-request log level.
    await send_log("info", "Diagnostic trace logging activated")
    return text_result("Logging evaluated")


@tool("test_streaming_elicitation", "Sends a progress notification on the call's stream, then its result")
async def test_streaming_elicitation(_: dict[str, Any]) -> types.CallToolResult:
    token = progress_token()
    if token is not None:
        await send_progress(token, 50, 100)
    return text_result("Streaming complete")
