"""An ordinary MCP server on the official Python SDK 1.x (PyPI `mcp` 1.30.0,
the FastMCP 1 inside it): protocol 2025-11-25 and older, sessions, no tasks
and no 2026-07-28. Most servers people run are like it; the gateway's
generation bridge serves clients of 2026-07-28 from it.

Tools:
- `greet(name)`: `Hello, {name}!` at once.
- `slow(seconds, label="slow")`: `{label} done after {seconds}s`, with
  `notifications/progress` every 200 ms (`step N of M`) when the call
  carries a progress token.
- `confirm(question)`: asks the client `question` (an `elicitation/create`
  for `{ok: bool}`), then answers `answered: yes|no` or `answered: ACTION`.

Usage:
    python server.py HOST:PORT              # Streamable HTTP, sessions; port 0 picks a free port
    python server.py --stateless HOST:PORT  # Streamable HTTP without sessions (stateless_http)
    python server.py --tokens A,B HOST:PORT # only requests with `Authorization: Bearer A` (or B)
    python server.py --stdio                # over stdin and stdout

Prints `listening on http://HOST:PORT/mcp` (the real port) once it accepts;
logs `slow started|finished|cancelled label=...` to stderr, and with
`--tokens`, `session opened token=A` for each session a request opens.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from serving import serve  # noqa: E402  (the shared uvicorn runner)

mcp = FastMCP("mcp-tasks-python1-fixture", stateless_http="--stateless" in sys.argv)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@mcp.tool()
def greet(name: str) -> str:
    """Answers `Hello, {name}!` at once."""
    return f"Hello, {name}!"


class Answer(BaseModel):
    """What `confirm` asks for."""

    ok: bool


@mcp.tool()
async def confirm(question: str, ctx: Context) -> str:
    """Asks the client `question` (an elicitation) and says what it answered."""
    answered = await ctx.elicit(message=question, schema=Answer)
    if answered.action == "accept":
        return f"answered: {'yes' if answered.data.ok else 'no'}"
    return f"answered: {answered.action}"


@mcp.tool()
async def slow(seconds: float, ctx: Context, label: str = "slow") -> str:
    """Sleeps `seconds`, reporting progress every 200 ms."""
    log(f"slow started label={label}")
    steps = max(1, round(seconds / 0.2))
    try:
        for step in range(1, steps + 1):
            await asyncio.sleep(seconds / steps)
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
    except asyncio.CancelledError:
        log(f"slow cancelled label={label}")
        raise
    log(f"slow finished label={label}")
    return f"{label} done after {seconds}s"


def bearer_only(app: Any, tokens: set[str]) -> Any:
    """`app`, answering `401` to an HTTP request without one of `tokens` as
    its bearer token, and logging the token of each session opened."""

    async def guarded(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        token = headers.get(b"authorization", b"").decode().removeprefix("Bearer ")
        if token not in tokens:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"a bearer token is required"})
            return
        new = b"mcp-session-id" not in headers

        async def sending(message: dict) -> None:
            if new and message["type"] == "http.response.start":
                if any(name == b"mcp-session-id" for name, _ in message.get("headers", [])):
                    log(f"session opened token={token}")
            await send(message)

        await app(scope, receive, sending)

    return guarded


def main() -> None:
    args = [arg for arg in sys.argv[1:] if arg != "--stateless"]
    tokens: set[str] = set()
    if args[:1] == ["--tokens"] and len(args) > 1:
        tokens = set(args[1].split(","))
        args = args[2:]
    if len(args) != 1:
        sys.exit(__doc__)
    if args[0] == "--stdio":
        mcp.run("stdio")
        return
    app = mcp.streamable_http_app()
    asyncio.run(serve(bearer_only(app, tokens) if tokens else app, args[0]))


if __name__ == "__main__":
    main()
