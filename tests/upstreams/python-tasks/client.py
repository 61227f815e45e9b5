"""FastMCP's own client with its tasks extension (fastmcp 4.1.4 with
fastmcp-tasks), as a user of it would call a server's task tools.

The client declares the tasks extension on every call; when a call answers
a task handle it polls `tasks/get` to the end and answers input requests
through its elicitation handler (`tasks/update`), so `call_tool` returns the
tool's result either way. `call_tool_task` returns the handle instead.

Usage:
    python client.py URL

Prints one line per call: `research: ...`, `approve: ...`, `handle: <task
id> ...`; exits 1 with the error on a failure.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from fastmcp import Client
from fastmcp_tasks.client import call_tool_task


async def approve(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
    """Accepts every elicitation with `{"ok": true}`."""
    print(f"asked: {message}", flush=True)
    return {"ok": True}


def text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def main(url: str) -> None:
    async with Client(url, elicitation_handler=approve) as client:
        research = await client.call_tool("research", {"topic": "tides", "seconds": 1})
        print(f"research: {text(research)}", flush=True)
        approved = await client.call_tool("approve", {"item": "plan"})
        print(f"approve: {text(approved)}", flush=True)
        task = await call_tool_task(client, "research", {"topic": "handle", "seconds": 0.5})
        result = await task.result()
        print(f"handle: {task.task_id} {text(result)}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1]))
