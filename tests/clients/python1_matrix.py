"""The interop matrix's driver for the official Python SDK 1.x client (mcp
1.30.0): protocol 2025-11-25, a session, and its experimental tasks
(`session.experimental`), as its users call them.

    scripts/client-python1.sh tests/clients/python1_matrix.py URL SPEC

The steps and SPEC are those of `matrix.py`. The slow and the cancelled
calls are task-augmented (`call_tool_as_task`), polled with `tasks/get`,
the result read with `tasks/result`, the cancel sent with `tasks/cancel`;
the question is asked on the plain call's stream (`elicitation/create`) and
answered by the session's elicitation callback.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.types import CallToolResult, ElicitResult, ErrorData

sys.path.insert(0, str(Path(__file__).parent))
import matrix  # noqa: E402  (beside this file)

# `session.experimental` is deprecated in 1.30 (tasks left the core spec);
# it is still what a 2025-11-25 client has.
warnings.filterwarnings("ignore", category=DeprecationWarning)


class Session:
    """The session and what its elicitation callback was asked."""

    def __init__(self, answer: dict[str, Any] | None) -> None:
        self.answer = answer
        self.asked: list[str] = []
        self.session: ClientSession

    async def elicit(self, context: Any, params: Any) -> ElicitResult | ErrorData:
        self.asked.append(params.message)
        return ElicitResult(action="accept", content=self.answer or {})


def text(result: CallToolResult) -> str:
    words = " ".join(getattr(block, "text", "") for block in result.content)
    if result.isError:
        raise matrix.Failed(f"tool error: {matrix.one_line(words)}")
    return words


@asynccontextmanager
async def connect(url: str, spec: dict[str, Any]) -> AsyncIterator[Session]:
    client = Session(spec.get("ask", {}).get("answer"))
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write, elicitation_callback=client.elicit) as session:
            init = await session.initialize()
            if init.capabilities.tasks is None:
                print("the server's initialize declares no tasks", file=sys.stderr)
            client.session = session
            yield client


async def list_tools(client: Session, _: dict[str, Any]) -> str:
    listed = await client.session.list_tools()
    return matrix.tool_names([tool.name for tool in listed.tools])


async def fast(client: Session, step: dict[str, Any]) -> str:
    result = await client.session.call_tool(step["tool"], step["arguments"])
    return repr(matrix.one_line(matrix.expect(text(result), step), 60))


def reader(client: Session, task_id: str) -> Callable[[], Awaitable[tuple[str, str | None]]]:
    """Reads the task's status and status message with `tasks/get`."""

    async def read() -> tuple[str, str | None]:
        got = await client.session.experimental.get_task(task_id)
        return got.status, got.statusMessage

    return read


async def slow(client: Session, step: dict[str, Any]) -> str:
    tasks = client.session.experimental
    created = await tasks.call_tool_as_task(step["tool"], step["arguments"])
    task_id = created.task.taskId
    status, messages = await matrix.poll(reader(client, task_id))
    if status != "completed":
        raise matrix.Failed(f"task {task_id[:8]}… ended {status}: {messages[-1:]}")
    final = await tasks.get_task_result(task_id, CallToolResult)
    return matrix.followed(task_id, messages, text(final), step)


async def cancel(client: Session, step: dict[str, Any]) -> str:
    tasks = client.session.experimental
    created = await tasks.call_tool_as_task(step["tool"], step["arguments"])
    task_id = created.task.taskId
    await matrix.running(reader(client, task_id), step)
    answered = await tasks.cancel_task(task_id)
    got = await tasks.get_task(task_id)
    if got.status != "cancelled":
        raise matrix.Failed(f"after tasks/cancel ({answered.status}) the task is {got.status}")
    return f"task {task_id[:8]}… cancelled"


async def ask(client: Session, step: dict[str, Any]) -> str:
    result = await client.session.call_tool(step["tool"], step["arguments"])
    said = text(result)
    if not client.asked:
        raise matrix.Failed(f"the client was asked nothing; result {matrix.one_line(said)!r}")
    matrix.expect(said, step)
    return f"asked {matrix.one_line(client.asked[0], 40)!r}, {matrix.one_line(said, 60)!r}"


if __name__ == "__main__":
    matrix.main(connect, {"list": list_tools, "fast": fast, "slow": slow, "cancel": cancel, "ask": ask})
