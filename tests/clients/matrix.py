"""The steps of one cell of the interop matrix (scripts/matrix.sh), shared by
its Python client drivers (`python1_matrix.py`, `fastmcp_matrix.py`); the
standard library only, so either client's venv runs it.

A driver is called `driver.py URL SPEC`: URL is the gateway's, SPEC a JSON
object naming the server's tools for each step (a step without a key is
`n/a`: the server has no such tool):

    {"fast":   {"tool": "greet", "arguments": {...}, "expect": "Hello"},
     "slow":   {"tool": "slow", "arguments": {...}, "expect": "done", "progress": true},
     "cancel": {"tool": "slow", "arguments": {...}, "progress": true},
     "ask":    {"tool": "confirm", "arguments": {...}, "answer": {...}, "expect": "yes"}}

`expect` is text the tool's result must contain; `progress` says the tool
reports progress, so the task's `statusMessage` must follow it (and a
cancel waits for the first, so that it reaches a running call); `answer`
is the content the client accepts the server's question with. The driver
prints one line a step, in the order of STEPS, and exits 0 (the lines say
what failed):

    list: ok 7 tools (greet, slow, ...)
    slow: FAIL no task: the call answered at once
    ask: n/a
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

#: The steps of a cell, in the order they run and print.
STEPS = ("list", "fast", "slow", "cancel", "ask")
#: How long one step may take, in seconds.
STEP_TIMEOUT = 60.0
#: How long a cancelled task may take to show `cancelled`, in seconds.
CANCEL_TIMEOUT = 20.0

Step = Callable[[Any, dict[str, Any]], Awaitable[str]]


class Failed(Exception):
    """A step that ran but did not do what it should; the message says why."""


def one_line(text: str, limit: int = 160) -> str:
    """`text` on one line, cut to `limit` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def expect(text: str, step: dict[str, Any]) -> str:
    """`text` (a result's), or `Failed` when it lacks the step's `expect`."""
    wanted = step.get("expect")
    if wanted and wanted not in text:
        raise Failed(f"result lacks {wanted!r}: {one_line(text)!r}")
    return text


def followed(task_id: str, messages: list[str], text: str, step: dict[str, Any]) -> str:
    """The detail of a slow step whose task `task_id` showed `messages` as
    its status and ended with `text`; `Failed` without progress it should have."""
    expect(text, step)
    if step.get("progress") and not messages:
        raise Failed(f"task {task_id[:8]}… completed, but its status never showed progress")
    shown = f" ({messages[0]!r} … {messages[-1]!r})" if messages else ""
    return f"task {task_id[:8]}…, {len(messages)} status messages{shown}, {one_line(text, 60)!r}"


def tool_names(names: list[str]) -> str:
    """The detail of a list step."""
    if not names:
        raise Failed("no tools")
    shown = ", ".join(sorted(names)[:4]) + (", …" if len(names) > 4 else "")
    return f"{len(names)} tools ({shown})"


async def poll(read: Callable[[], Awaitable[tuple[str, str | None]]], interval: float = 0.1) -> tuple[str, list[str]]:
    """Calls `read()` (the task's status and status message) until the status
    leaves `working`; returns the last status and each new message seen."""
    messages: list[str] = []
    while True:
        status, message = await read()
        if message and (not messages or messages[-1] != message):
            messages.append(message)
        if status != "working":
            return status, messages
        await asyncio.sleep(interval)


async def running(read: Callable[[], Awaitable[tuple[str, str | None]]], step: dict[str, Any]) -> None:
    """Returns once the task `read()` reads has shown a status message (the
    tool reported progress: it runs), or at once if it ended; after 1 s for
    a tool that reports none. Cancelled sooner, a call may not have reached
    the server at all."""
    if not step.get("progress"):
        await asyncio.sleep(1)
        return
    while True:
        status, message = await read()
        if message or status != "working":
            return
        await asyncio.sleep(0.1)


def describe(error: BaseException) -> str:
    """An exception as a short reason (its type, message and, for an
    exception group, the first one inside)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, Failed):
        return one_line(str(error))
    if isinstance(error, TimeoutError):
        return "timed out"
    return one_line(f"{type(error).__name__}: {error}")


async def run(url: str, spec: dict[str, Any], connect: Callable[[str, dict[str, Any]], AbstractAsyncContextManager[Any]], steps: dict[str, Step]) -> None:
    """Connects with `connect(url, spec)` and runs `steps` (by name) with the
    client it gives, printing a line a step; a failed connection fails every
    step not printed yet."""
    printed: list[str] = []

    def say(name: str, line: str) -> None:
        printed.append(name)
        print(f"{name}: {line}", flush=True)

    try:
        async with connect(url, spec) as client:
            for name in STEPS:
                if name != "list" and name not in spec:
                    say(name, "n/a")
                    continue
                try:
                    detail = await asyncio.wait_for(steps[name](client, spec.get(name, {})), STEP_TIMEOUT)
                    say(name, f"ok {detail}")
                except Exception as error:  # noqa: BLE001 (each step reports its own failure)
                    traceback.print_exc(file=sys.stderr)
                    say(name, f"FAIL {describe(error)}")
    except BaseException as error:  # noqa: BLE001 (the session itself broke)
        traceback.print_exc(file=sys.stderr)
        for name in STEPS:
            if name not in printed:
                say(name, f"FAIL session: {describe(error)}")


def main(connect: Callable[[str, dict[str, Any]], AbstractAsyncContextManager[Any]], steps: dict[str, Step]) -> None:
    """The driver's entry point: `driver.py URL SPEC`."""
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} URL SPEC (see {__file__})")
    asyncio.run(run(sys.argv[1], json.loads(sys.argv[2]), connect, steps))
