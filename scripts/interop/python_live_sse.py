"""The official Python MCP SDK (2.3.0) against a TasksLayer server: when the
progress of a call that answers in time, and of one that becomes a task,
reaches the client. Run by scripts/interop-python.sh; usage: URL."""
import asyncio
import sys
import time
from typing import Any, Literal

from mcp.client.client import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import CallToolResult, Result
from mcp_types._types import GetTaskRequestParams, Request
from pydantic import ConfigDict

T0 = 0.0


def ms() -> str:
    return f"{(time.monotonic() - T0) * 1000:7.1f} ms"


class TaskHandle(Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None


class TaskState(Result):
    model_config = ConfigDict(extra="allow")
    status: str
    result: dict[str, Any] | None = None


class TasksGet(Request[GetTaskRequestParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: GetTaskRequestParams
    name_param = "taskId"


async def resolve(handle: TaskHandle, ctx: ClaimContext) -> CallToolResult:
    print(ms(), "task handle:", handle.task_id, handle.status, repr(handle.status_message))
    while True:
        await asyncio.sleep(0.25)
        state = await ctx.session.send_request(
            TasksGet(params=GetTaskRequestParams(task_id=handle.task_id)), TaskState
        )
        if state.status in ("completed", "failed", "cancelled"):
            print(ms(), "task", state.status)
            return CallToolResult.model_validate(state.result or {"content": []})


class Tasks(ClientExtension):
    identifier = "io.modelcontextprotocol/tasks"

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=resolve)]


async def main(url: str) -> None:
    global T0
    async with Client(url, extensions=[Tasks()]) as client:
        print("protocol", client.protocol_version)
        # A fast call: its SSE answer is one event, the response, which the
        # layer relays by its bytes (flight::direct).
        print("--- greet")
        T0 = time.monotonic()
        result = await client.call_tool("greet", {"name": "interop"})
        print(ms(), "result:", result.content[0].text if result.content else result)
        for seconds in (0.45, 1.5):
            async def progress(value: float, total: float | None, message: str | None) -> None:
                print(ms(), "progress", value, message)

            print(f"--- slow_compute seconds={seconds}")
            T0 = time.monotonic()
            result = await client.call_tool(
                "slow_compute", {"seconds": seconds}, progress_callback=progress
            )
            print(ms(), "result:", result.content[0].text if result.content else result)


asyncio.run(main(sys.argv[1]))
