"""The interop matrix's driver for FastMCP 4.1.4's client (the official Python
SDK 2.3 inside: protocol 2026-07-28, no session) and its tasks extension
(`fastmcp_tasks`, SEP-2663), as its users call them.

    scripts/client-fastmcp.sh tests/clients/fastmcp_matrix.py URL SPEC

The steps and SPEC are those of `matrix.py`. The slow and the cancelled
calls start with `call_tool_task` (the call declares the extension and is
answered with a task handle once the gateway parks it), are followed with
`tasks/get` and cancelled with `tasks/cancel`; the question comes as an MRTR
`input_required` round of the plain call, which the client answers with its
elicitation handler and retries.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp_tasks.client import call_tool_task

sys.path.insert(0, str(Path(__file__).parent))
import matrix  # noqa: E402  (beside this file)


class Asker:
    """The client's elicitation handler: accepts with the step's answer and
    notes what it was asked."""

    def __init__(self, answer: dict[str, Any] | None) -> None:
        self.answer = answer or {}
        self.asked: list[str] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
        self.asked.append(message)
        return self.answer


def text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


@asynccontextmanager
async def connect(url: str, spec: dict[str, Any]) -> AsyncIterator[Client]:
    asker = Asker(spec.get("ask", {}).get("answer"))
    async with Client(url, elicitation_handler=asker) as client:
        client.asker = asker  # type: ignore[attr-defined]
        yield client


async def list_tools(client: Client, _: dict[str, Any]) -> str:
    return matrix.tool_names([tool.name for tool in await client.list_tools()])


async def fast(client: Client, step: dict[str, Any]) -> str:
    result = await client.call_tool(step["tool"], step["arguments"])
    return repr(matrix.one_line(matrix.expect(text(result), step), 60))


def reader(task: Any) -> Callable[[], Awaitable[tuple[str, str | None]]]:
    """Reads the task's status and status message with `tasks/get`."""

    async def read() -> tuple[str, str | None]:
        got = await task.status()
        return got.status, getattr(got, "status_message", None)

    return read


async def slow(client: Client, step: dict[str, Any]) -> str:
    task = await call_tool_task(client, step["tool"], step["arguments"])
    status, messages = await matrix.poll(reader(task))
    if status != "completed":
        raise matrix.Failed(f"task {task.task_id[:8]}… ended {status}: {messages[-1:]}")
    result = await task.result()
    return matrix.followed(task.task_id, messages, text(result), step)


async def cancel(client: Client, step: dict[str, Any]) -> str:
    task = await call_tool_task(client, step["tool"], step["arguments"])
    await matrix.running(reader(task), step)
    await task.cancel()
    final = await task.wait(timeout=matrix.CANCEL_TIMEOUT)
    if final.status != "cancelled":
        raise matrix.Failed(f"after tasks/cancel the task ended {final.status}")
    return f"task {task.task_id[:8]}… cancelled"


async def ask(client: Client, step: dict[str, Any]) -> str:
    result = await client.call_tool(step["tool"], step["arguments"])
    said = text(result)
    asked = client.asker.asked  # type: ignore[attr-defined]
    if not asked:
        raise matrix.Failed(f"the client was asked nothing; result {matrix.one_line(said)!r}")
    matrix.expect(said, step)
    return f"asked {matrix.one_line(asked[0], 40)!r}, {matrix.one_line(said, 60)!r}"


if __name__ == "__main__":
    matrix.main(connect, {"list": list_tools, "fast": fast, "slow": slow, "cancel": cancel, "ask": ask})
