"""The upstream of scripts/chaos.sh: an ordinary MCP server on the official
Python SDK 1.x (PyPI `mcp` 1.30.0), stateless (no sessions, so a restart
loses nothing a client holds), that writes every start and every end of a
tool run to a log file, so that the chaos checker can count runs.

Tools (each takes `id`, a string unique to one call of the load):
- `fast(id)`: answers `fast {id}` at once.
- `slow_plain(id, seconds)`: sleeps, then answers; NOT safe to run twice.
- `slow_idem(id, seconds)`: the same, marked `idempotentHint: true`, so the
  gateway may run it again after a restart.

Usage:
    python server.py HOST:PORT RUNS_LOG     # port 0 picks a free port

Prints `listening on http://HOST:PORT/mcp` once it accepts. Appends to
RUNS_LOG, one line per event, fields separated by spaces, times in
seconds since the epoch:
    boot PID TIME                 the server started (a run of an earlier
                                  PID with no end line ended before TIME)
    start TOOL ID PID TIME        a run began
    end TOOL ID PID TIME OUTCOME  it ended: finished or cancelled
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from serving import serve  # noqa: E402  (the shared uvicorn runner)

mcp = FastMCP("mcp-tasks-chaos-upstream", stateless_http=True)
LOG_FD = -1


def record(*fields: object) -> None:
    """One line appended with a single write (O_APPEND), so lines of
    concurrent runs never interleave."""
    line = " ".join(str(field) for field in fields) + "\n"
    os.write(LOG_FD, line.encode())


async def run(tool: str, run_id: str, seconds: float) -> str:
    record("start", tool, run_id, os.getpid(), f"{time.time():.3f}")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        record("end", tool, run_id, os.getpid(), f"{time.time():.3f}", "cancelled")
        raise
    record("end", tool, run_id, os.getpid(), f"{time.time():.3f}", "finished")
    return f"{tool} {run_id}"


@mcp.tool()
async def fast(id: str) -> str:  # noqa: A002 (the load's name for it)
    """Answers at once."""
    return await run("fast", id, 0)


@mcp.tool()
async def slow_plain(id: str, seconds: float) -> str:  # noqa: A002
    """Sleeps `seconds`; not safe to run twice."""
    return await run("slow_plain", id, seconds)


@mcp.tool(annotations=ToolAnnotations(idempotentHint=True))
async def slow_idem(id: str, seconds: float) -> str:  # noqa: A002
    """Sleeps `seconds`; safe to run twice."""
    return await run("slow_idem", id, seconds)


def main() -> None:
    global LOG_FD
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    LOG_FD = os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    record("boot", os.getpid(), f"{time.time():.3f}")
    asyncio.run(serve(mcp.streamable_http_app(), sys.argv[1]))


if __name__ == "__main__":
    main()
