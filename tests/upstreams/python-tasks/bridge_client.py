"""FastMCP 4.1.4's own client (the official Python SDK 2.3 inside, protocol
2026-07-28, the tasks extension from fastmcp-tasks) against a server of an
older generation behind the gateway, as a user of it would call it.

    python bridge_client.py URL [--ask] [--token TOKEN]

Lists the tools, calls `greet` (fast), with `--ask` calls `confirm`, whose
question (an elicitation of the server's) the client answers `ok: true`,
starts `slow` as a task and follows it with `tasks/get` to its result, then
starts another and cancels it. Prints one line per step:

    tools: confirm,greet,slow
    greet: Hello, bridge!
    confirm: answered: yes               (with --ask; the question asked is logged as "asked: ...")
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


async def answer(message: str, response_type: Any, params: Any, context: Any) -> dict:
    """Answers every question of the server: yes."""
    print(f"asked: {message}", flush=True)
    return {"ok": True}


async def main(url: str, ask: bool, token: str | None) -> None:
    async with Client(url, elicitation_handler=answer, auth=token) as client:
        tools = await client.list_tools()
        print("tools: " + ",".join(sorted(tool.name for tool in tools)), flush=True)
        greeted = await client.call_tool("greet", {"name": "bridge"})
        print(f"greet: {text(greeted)}", flush=True)
        if ask:
            confirmed = await client.call_tool("confirm", {"question": "Go on?"})
            print(f"confirm: {text(confirmed)}", flush=True)
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
    options = sys.argv[2:]
    ask = "--ask" in options
    if ask:
        options.remove("--ask")
    token = None
    if options[:1] == ["--token"] and len(options) == 2:
        token = options[1]
        options = []
    if len(sys.argv) < 2 or options:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1], ask, token))
