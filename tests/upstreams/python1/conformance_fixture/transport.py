"""Serving the fixture's `server`: the Streamable HTTP app at `/mcp` (with
sessions, SSE answers and DNS-rebinding protection for loopback hosts, as
the SDK sets them up for a local server), and one session over stdio."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route

from .base import server


def http_app() -> Starlette:
    """The Streamable HTTP app at `/mcp`, with sessions and SSE answers (the
    SDK's defaults), DNS-rebinding protection for loopback hosts."""
    loopback = ["127.0.0.1", "localhost", "[::1]"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{host}:*" for host in loopback],
        allowed_origins=[f"http://{host}:*" for host in loopback],
    )
    manager = StreamableHTTPSessionManager(app=server, security_settings=security)

    class Endpoint:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Route("/mcp", endpoint=Endpoint())], lifespan=lifespan)


async def run_stdio() -> None:
    """One session over stdin and stdout, until the client closes it."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
