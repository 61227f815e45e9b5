"""The official Python SDK 1.x client (mcp 1.30.0) with the experimental
tasks of protocol 2025-11-25, as its users call them: a session, a tool
called as a task, polled to its end, its result read.

Usage: python python1_tasks.py URL TOOL SECONDS

Calls TOOL with {"seconds": SECONDS, "label": "kept"} (the fixtures'
`slow_compute`). Prints one line per step:

    tasks: True                 (the server's initialize declares tasks)
    task: <id> working
    status: <status>            (each poll)
    result: <the tool's text>

and exits 1 with the error on a failure.
"""

import asyncio
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.types import CallToolResult


async def main(url: str, tool: str, seconds: float) -> None:
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            print(f"tasks: {init.capabilities.tasks is not None}", flush=True)
            arguments = {"seconds": seconds, "label": "kept"}
            created = await session.experimental.call_tool_as_task(tool, arguments)
            task_id = created.task.taskId
            print(f"task: {task_id} {created.task.status}", flush=True)
            async for status in session.experimental.poll_task(task_id):
                print(f"status: {status.status}", flush=True)
            final = await session.experimental.get_task_result(task_id, CallToolResult)
            text = "".join(block.text for block in final.content if block.type == "text")
            print(f"result: {text}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
