"""The fixture's low-level `Server` and what every part of it shares: the
server's name, the suite's test image and audio, the request context of
the call being answered, and small builders of results, contents and
progress notifications."""

from __future__ import annotations

import logging
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.context import RequestContext

SERVER_NAME = "mcp-tasks-python1-conformance"

#: A 1x1 red PNG and a minimal WAV, as the suite's own fixture sends them.
TEST_IMAGE_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

log = logging.getLogger("conformance-fixture")


class FixtureServer(Server):
    """A low-level server that declares `listChanged` for tools and prompts
    (the SDK's session manager asks for the options without arguments)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        notify = notification_options or NotificationOptions(prompts_changed=True, tools_changed=True)
        return super().create_initialization_options(notify, experimental_capabilities)


server = FixtureServer(
    SERVER_NAME,
    version="1.0.0",
    instructions="The conformance suite's fixtures on the Python MCP SDK 1.x; no tasks, no 2026-07-28.",
)


def context() -> RequestContext[Any, Any, Any]:
    """The request being answered (a tool call, a prompt, ...)."""
    return server.request_context


def text_result(message: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], isError=is_error)


def test_image() -> types.ImageContent:
    """The suite's 1x1 PNG as image content."""
    return types.ImageContent(type="image", data=TEST_IMAGE_BASE64, mimeType="image/png")


def embedded(uri: str, mime_type: str, text: str) -> types.EmbeddedResource:
    resource = types.TextResourceContents(uri=uri, mimeType=mime_type, text=text)  # type: ignore[arg-type]
    return types.EmbeddedResource(type="resource", resource=resource)


def progress_token() -> types.ProgressToken | None:
    """The call's progressToken, if it carries one."""
    ctx = context()
    return ctx.meta.progressToken if ctx.meta else None


async def send_progress(
    token: types.ProgressToken, progress: float, total: float, message: str | None = None
) -> None:
    """A `notifications/progress` on the call's stream."""
    ctx = context()
    await ctx.session.send_progress_notification(
        token, progress, total, message, related_request_id=ctx.request_id
    )
