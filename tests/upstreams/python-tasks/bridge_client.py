"""FastMCP 4.1.4's own client (the official Python SDK 2.3 inside, protocol
2026-07-28, the tasks extension from fastmcp-tasks) against a server of an
older generation behind the gateway, as a user of it would call it.

    python bridge_client.py URL

Lists the tools, calls `greet` (fast), starts `slow` as a task and follows it
with `tasks/get` to its result, then starts another and cancels it. Prints
one line per step:

    tools: greet,slow
    greet: Hello, bridge!
    task: <id> working
    status: <statusMessage>            (each new one while it runs)
    result: bridge done after 2.0s
    cancelled: <id> cancelled

and exits 1 with the error on a failure.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from fastmcp import Client
from fastmcp_tasks.client import call_tool_task


def text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def follow(task: Any) -> None:
    """Prints each new status message until the task ends."""
    seen = None
    while True:
        status = await task.status()
        message = getattr(status, "status_message", None)
        if message and message != seen:
            print(f"status: {message}", flush=True)
            seen = message
        if status.status != "working":
            return
        await asyncio.sleep(0.1)


async def main(url: str) -> None:
    async with Client(url) as client:
        tools = await client.list_tools()
        print("tools: " + ",".join(sorted(tool.name for tool in tools)), flush=True)
        greeted = await client.call_tool("greet", {"name": "bridge"})
        print(f"greet: {text(greeted)}", flush=True)
        task = await call_tool_task(client, "slow", {"seconds": 2.0, "label": "bridge"})
        print(f"task: {task.task_id} {task.create_result.status}", flush=True)
        await follow(task)
        result = await task.result()
        print(f"result: {text(result)}", flush=True)
        doomed = await call_tool_task(client, "slow", {"seconds": 30.0, "label": "doomed"})
        await doomed.cancel()
        final = await doomed.wait(timeout=20)
        print(f"cancelled: {doomed.task_id} {final.status}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1]))
