"""A Python MCP server with tasks of its own, built with FastMCP and fastmcp-tasks.

It is the upstream of the gateway tests for servers that already run tools
as tasks (SEP-2663, protocol 2026-07-28): FastMCP's `TasksExtension`
(in-memory Docket backend) serves `tasks/get`, `tasks/update` and
`tasks/cancel` itself, and advertises the tasks extension in
`server/discover`. `TasksLayer` sits in front and must keep its tools
working.

| tool       | task mode  | behaviour                                                        |
|------------|------------|------------------------------------------------------------------|
| `research` | `required` | works `seconds` (default 2) in steps of 0.25 s, each step's progress message `step N of M`, then `Research on {topic}: done` |
| `approve`  | `required` | asks `approval` (an elicitation form, the guard pattern: the task goes `input_required`), then reports the answer |
| `greet`    | none       | `Hello, {name}!` at once                                         |

With `FIXTURE_HEX_TASK_IDS=1` its task ids are 32 lowercase hex digits, the
form of the layer's own.

Called without the client's tasks extension, the `required` tools answer
the error -32021, as FastMCP does.

Usage (scripts/upstream-python.sh --tasks installs the packages and runs it):
    python fixture.py HOST:PORT      # port 0 picks a free port

Prints `listening on http://HOST:PORT/mcp` (the real port) on stdout once
it accepts connections; log lines go to stderr, among them
`research started|finished|cancelled topic=...`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import sys
from pathlib import Path

import anyio
import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.tools import ToolResult
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

# The serving routine the plain fixture uses.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from serving import serve  # noqa: E402

#: One step of `research`.
STEP = 0.25

log = logging.getLogger("fixture")

if os.environ.get("FIXTURE_HEX_TASK_IDS") == "1":
    # Task ids of 32 lowercase hex digits, the form of the layer's own ids
    # (as servers that draw them with `secrets.token_hex(16)` have them).
    import fastmcp_tasks.creation as creation

    class HexIds:
        @staticmethod
        def token_urlsafe(_: int) -> str:
            return secrets.token_hex(16)

    creation.secrets = HexIds  # type: ignore[assignment]

mcp = FastMCP(name="mcp-tasks-python-tasks-fixture")
mcp.add_extension(TasksExtension(url="memory://"))


@mcp.tool(task=TaskConfig(mode="required"), description="Works `seconds` as a task, reporting each step.")
async def research(topic: str, ctx: Context, seconds: float = 2.0) -> ToolResult:
    steps = max(1, round(seconds / STEP))
    log.info("research started topic=%s", topic)
    try:
        for step in range(1, steps + 1):
            await anyio.sleep(STEP)
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
    except anyio.get_cancelled_exc_class():
        log.info("research cancelled topic=%s", topic)
        raise
    log.info("research finished topic=%s", topic)
    return ToolResult(content=f"Research on {topic}: done")


@mcp.tool(task=TaskConfig(mode="required"), description="Asks `approval` as a task, then reports the answer.")
async def approve(item: str, ctx: Context) -> ToolResult | mcp_types.InputRequiredResult:
    answers = ctx.input_responses or {}
    answer = answers.get("approval")
    if answer is None:
        form = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        ask = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message=f"Approve {item}?", requested_schema=form)
        )
        return mcp_types.InputRequiredResult(input_requests={"approval": ask})
    answer = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    return ToolResult(content=f"{item}: {json.dumps(answer)}")


@mcp.tool(description="Answers `Hello, {name}!` at once.")
async def greet(name: str) -> ToolResult:
    return ToolResult(content=f"Hello, {name}!")


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    asyncio.run(serve(mcp.http_app(path="/mcp"), sys.argv[1]))


if __name__ == "__main__":
    main()
