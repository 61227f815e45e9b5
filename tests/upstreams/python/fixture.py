"""An ordinary Python MCP server, built with FastMCP, that knows nothing about tasks.

It is the Python upstream of the gateway tests: `TasksLayer` (or the gateway
binary) sits in front of it and turns its slow `tools/call` answers into
tasks. It exposes the tools the official conformance suite calls, with the
behaviour the Rust fixture (tests/support/fixture/) gives them:

| tool                  | behaviour                                                        |
|-----------------------|------------------------------------------------------------------|
| `greet`               | `Hello, {name}!` at once                                         |
| `slow_compute`        | sleeps `seconds`; progress every 200 ms when asked; cancellable  |
| `failing_job`         | about 1 s (or `seconds`), then an `isError: true` result         |
| `protocol_error_job`  | after `seconds` (default 0), a JSON-RPC error -32603             |
| `confirm_delete`      | asks `confirm`, then reports the answer                          |
| `multi_input`         | asks `first` and `second` at once                                |
| `test_tool_with_task` | asks `name`, then works 1.5 s and greets the name                |

The three asking tools use MRTR on 2026-07-28 (they return an
`InputRequiredResult` and read `ctx.input_responses` / `ctx.request_state`
on the retry) and real `elicitation/create` requests on 2025-11-25 sessions,
which have no `input_required` result.

Usage:
    python fixture.py HOST:PORT      # port 0 picks a free port
    python fixture.py --stdio        # one session over stdin and stdout

Prints `listening on http://HOST:PORT/mcp` (the real port) on stdout once
the server accepts connections. Log lines go to stderr; `slow_compute`
writes `slow_compute started|finished|cancelled label=... seconds=...` there
so a test can see whether a cancellation reached the tool.

One URL serves both protocol generations (FastMCP's default stateful mode):
a request whose `MCP-Protocol-Version` header is 2026-07-28 is served as a
self-contained exchange, anything else goes through the `initialize` session.
Answers use FastMCP's default (not JSON-response mode): a 2026-07-28 answer
is plain JSON unless the tool sends a notification (or runs past 15 s),
which turns the response into an SSE stream; 2025-11-25 answers are SSE.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import anyio
import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools import ToolResult
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field
from serving import serve

#: Interval between two `notifications/progress` of `slow_compute`.
PROGRESS_INTERVAL = 0.2
#: How long `failing_job` runs by default before its `isError` result.
FAILING_JOB_DEFAULT = 1.0
#: How long `test_tool_with_task` works once it has the name.
TEST_TOOL_WITH_TASK_DELAY = 1.5

SERVER_NAME = "mcp-tasks-python-fixture"

log = logging.getLogger("fixture")

Seconds = Annotated[float, Field(ge=0, description="Seconds to run")]

mcp = FastMCP(
    name=SERVER_NAME,
    instructions="Python fixture MCP server for mcp-tasks tests; it knows nothing about tasks.",
)


def text(message: str, *, is_error: bool = False) -> ToolResult:
    """A result with one text block and no structured content."""
    return ToolResult(content=message, is_error=is_error)


# --- plain tools -------------------------------------------------------------


@mcp.tool(description="Answers `Hello, {name}!` at once.")
async def greet(name: str) -> ToolResult:
    return text(f"Hello, {name}!")


@mcp.tool(description="Sleeps `seconds`; sends notifications/progress every 200 ms when given a progressToken.")
async def slow_compute(seconds: Seconds, ctx: Context, label: str = "slow_compute") -> ToolResult:
    # `report_progress` sends nothing when the request carries no progressToken.
    tag = f"label={label} seconds={seconds:g}"
    log.info("slow_compute started %s", tag)
    try:
        await ctx.report_progress(0, seconds, f"{label}: started")
        start = time.monotonic()
        deadline = start + seconds
        while (now := time.monotonic()) < deadline:
            await anyio.sleep(min(PROGRESS_INTERVAL, deadline - now))
            elapsed = time.monotonic() - start
            if elapsed < seconds:
                await ctx.report_progress(elapsed, seconds, f"{label}: {elapsed:.1f}s of {seconds:g}s")
    except anyio.get_cancelled_exc_class():
        # The SDK cancels the handler when the client closes the response
        # stream (2026-07-28) or sends notifications/cancelled (sessions).
        log.info("slow_compute cancelled %s", tag)
        raise
    log.info("slow_compute finished %s", tag)
    return text(f"{label} done after {seconds:g}s")


@mcp.tool(description="Runs about one second (or `seconds`), then returns a tool error (isError: true).")
async def failing_job(seconds: Seconds = FAILING_JOB_DEFAULT) -> ToolResult:
    await anyio.sleep(seconds)
    return text("failing_job failed on purpose", is_error=True)


class JsonRpcError(MCPError):
    """An error a tool means to end its call with, as a JSON-RPC error."""


@mcp.tool(description="Answers a JSON-RPC error (-32603), after `seconds` (default 0).")
async def protocol_error_job(seconds: Seconds = 0.0) -> ToolResult:
    await anyio.sleep(seconds)
    # FastMCP turns any exception of a tool body into an `isError` result;
    # JsonRpcErrors below takes this one back out to the wire.
    raise JsonRpcError(
        code=mcp_types.INTERNAL_ERROR,
        message="protocol_error_job failed on purpose",
        data={"tool": "protocol_error_job"},
    )


class JsonRpcErrors(Middleware):
    """Lets a tool end its call with a real JSON-RPC error.

    FastMCP wraps whatever a tool raises into a `ToolError` (an `isError`
    result; fastmcp/server/server.py, `call_tool`, "Standard masking logic").
    A `JsonRpcError` is found again as the `ToolError`'s cause, and raising
    it from middleware reaches the wire as the JSON-RPC error itself. Other
    errors (an `MCPError` from a failed elicitation, say) stay `isError`.
    """

    async def on_call_tool(self, context: MiddlewareContext, call_next: Any) -> Any:
        try:
            return await call_next(context)
        except ToolError as error:
            if isinstance(error.__cause__, JsonRpcError):
                raise error.__cause__ from None
            raise


mcp.add_middleware(JsonRpcErrors())


class QuietOnPurpose(logging.Filter):
    """Drops FastMCP's traceback for a `JsonRpcError` a tool raised on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, JsonRpcError)


logging.getLogger("fastmcp.server.server").addFilter(QuietOnPurpose())


# --- tools that ask for input ------------------------------------------------


def text_form(field: str) -> dict[str, Any]:
    """An elicitation form with one required string field."""
    return {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}


#: What each asking tool asks: key -> (message, form). `{filename}` is filled in.
QUESTIONS: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {
    "confirm_delete": {
        "confirm": (
            "Delete {filename}?",
            {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
        ),
    },
    "multi_input": {
        "first": ("First value?", text_form("value")),
        "second": ("Second value?", text_form("value")),
    },
    "test_tool_with_task": {
        "name": ("What is your name?", text_form("name")),
    },
}


def is_modern(ctx: Context) -> bool:
    """Whether this call came on the 2026-07-28 wire (MRTR) rather than a session."""
    request = ctx.request_context
    return request is not None and request.protocol_version in MODERN_PROTOCOL_VERSIONS


async def collect(ctx: Context, tool: str, **fill: str) -> dict[str, Any] | mcp_types.InputRequiredResult:
    """The answers to all of `tool`'s questions, as JSON objects by key.

    On 2026-07-28, returns an `InputRequiredResult` for the questions not
    answered yet; answers from earlier rounds travel in `requestState`
    (FastMCP seals it, binds it to this tool and these arguments, and hands
    it back as plaintext). On a session, asks every question at once, each
    with a real `elicitation/create` request, and waits for all of them.
    """
    questions = QUESTIONS[tool]
    if not is_modern(ctx):
        # The SDK would send the request anyway, and wait for an answer that
        # never comes; say so at once instead (as an `isError` result).
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            raise ToolError(f"{tool} asks for input: the client did not declare the elicitation capability")
        async def ask_one(message: str, form: dict[str, Any]) -> dict[str, Any]:
            result = await ctx.session.elicit(
                message=message.format(**fill), requested_schema=form, related_request_id=ctx.request_id
            )
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)

        asked = [ask_one(message, form) for message, form in questions.values()]
        return dict(zip(questions, await asyncio.gather(*asked)))

    answers = json.loads(ctx.request_state) if ctx.request_state else {}
    for key, response in (ctx.input_responses or {}).items():
        if key in questions:  # unknown keys are ignored
            answers[key] = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    missing = {
        key: mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message=message.format(**fill), requested_schema=form)
        )
        for key, (message, form) in questions.items()
        if key not in answers
    }
    if missing:
        return mcp_types.InputRequiredResult(input_requests=missing, request_state=json.dumps(answers))
    return answers


AskResult = ToolResult | mcp_types.InputRequiredResult


async def ask(
    ctx: Context, tool: str, finish: Callable[[dict[str, Any]], Awaitable[ToolResult]], **fill: str
) -> AskResult:
    """`tool`'s `input_required` result, or `finish(answers)` once every question is answered."""
    answers = await collect(ctx, tool, **fill)
    if isinstance(answers, mcp_types.InputRequiredResult):
        return answers
    return await finish(answers)


@mcp.tool(description="MRTR: asks `confirm` (elicitation/create), then reports the answer.")
async def confirm_delete(filename: str, ctx: Context) -> AskResult:
    async def finish(answers: dict[str, Any]) -> ToolResult:
        confirm = answers["confirm"]
        accepted = confirm.get("action") == "accept" and (confirm.get("content") or {}).get("confirm") is not False
        verdict = "Deleted" if accepted else "Kept"
        return text(f"{verdict} {filename} (answer: {json.dumps(confirm)})")

    return await ask(ctx, "confirm_delete", finish, filename=filename)


@mcp.tool(description="MRTR: asks `first` and `second` at once; completes when both are answered.")
async def multi_input(ctx: Context) -> AskResult:
    async def finish(answers: dict[str, Any]) -> ToolResult:
        return text(f"multi_input done: first={json.dumps(answers['first'])}, second={json.dumps(answers['second'])}")

    return await ask(ctx, "multi_input", finish)


@mcp.tool(description="MRTR: asks `name`, then works 1.5 s and greets the name.")
async def test_tool_with_task(ctx: Context) -> AskResult:
    async def finish(answers: dict[str, Any]) -> ToolResult:
        response = answers["name"]
        name = (response.get("content") or {}).get("name") or json.dumps(response)
        await anyio.sleep(TEST_TOOL_WITH_TASK_DELAY)
        return text(f"Hello, {name}! test_tool_with_task finished")

    return await ask(ctx, "test_tool_with_task", finish)


# --- serving -------------------------------------------------------------------


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if sys.argv[1] == "--stdio":
        # One session over stdin/stdout, newline-delimited JSON-RPC.
        asyncio.run(mcp.run_stdio_async(show_banner=False))
    else:
        asyncio.run(serve(mcp.http_app(path="/mcp"), sys.argv[1]))


if __name__ == "__main__":
    main()
