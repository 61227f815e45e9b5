"""A client that knows no tasks (the official Python SDK 1.x, ClientSession
over Streamable HTTP, defaults everywhere) calls long tools through the
gateway with the fallback on, as a new user would: the call answers with a
task, and the outcome comes through the two tools the gateway adds.

Usage: python python1_fallback.py URL SECONDS

Checks, in order:
  1. tools/list carries get_task_result and cancel_task;
  2. slow_compute(SECONDS) answers before SECONDS with a task id (text and
     structuredContent);
  3. get_task_result, asked at the suggested interval, reports the progress
     and then slow_compute's own result;
  4. cancel_task stops a second, 600 s call, and get_task_result says so;
  5. slow_structured (it has an outputSchema) answers with its task too, which
     the SDK checks against the listed schema and takes, and its outcome is
     the tool's own structured content.
Prints one line per step and a last `summary {json}` line; exits 1 on the
first failed check.
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}", flush=True)
        sys.exit(1)


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def outcome(session, task, seen):
    """get_task_result until the task is no longer working."""
    while True:
        read = await session.call_tool("get_task_result", {"taskId": task})
        status = (read.structuredContent or {}).get("status")
        if status != "working":
            return read
        message = read.structuredContent.get("statusMessage")
        if message and (not seen or seen[-1] != message):
            seen.append(message)
        wait = read.structuredContent.get("pollIntervalMs", 1000) / 1000
        await asyncio.sleep(wait)


async def main(url, seconds):
    summary = {}
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            summary["protocolVersion"] = init.protocolVersion
            names = [tool.name for tool in (await session.list_tools()).tools]
            check("get_task_result" in names and "cancel_task" in names, f"added tools in {names}")
            print(f"1. tools/list: {names}", flush=True)

            started = time.monotonic()
            answer = await session.call_tool("slow_compute", {"seconds": seconds})
            answered = time.monotonic() - started
            task = (answer.structuredContent or {}).get("taskId")
            check(task and not answer.isError, f"a task in {answer}")
            check(task in text_of(answer), "the text names the task")
            check(answered < seconds, f"answered after {answered:.1f}s, before the {seconds}s tool ends")
            print(f"2. slow_compute({seconds}) answered after {answered:.2f}s: {text_of(answer)}", flush=True)
            summary["answeredAfterS"] = round(answered, 2)

            seen = []
            done = await outcome(session, task, seen)
            finished = time.monotonic() - started
            said = text_of(done)
            check(not done.isError and said.startswith("slow_compute done after"), f"the tool's own result, got {done}")
            print(f"3. outcome after {finished:.1f}s: {said!r}; progress seen: {seen}", flush=True)
            summary["outcomeAfterS"] = round(finished, 1)
            summary["progressMessagesSeen"] = len(seen)

            answer = await session.call_tool("slow_compute", {"seconds": 600})
            doomed = (answer.structuredContent or {}).get("taskId")
            check(doomed, f"a task in {answer}")
            cancelled = await session.call_tool("cancel_task", {"taskId": doomed})
            check(cancelled.structuredContent.get("status") == "cancelled", f"cancelled: {cancelled}")
            read = await session.call_tool("get_task_result", {"taskId": doomed})
            check(read.isError and "cancelled" in text_of(read), f"reads as cancelled: {read}")
            print(f"4. cancel_task: {text_of(cancelled)!r}; then {text_of(read)!r}", flush=True)

            # The SDK checks the answer against the listed outputSchema:
            # the handle must be one it takes, and the outcome too.
            answer = await session.call_tool("slow_structured", {"seconds": 5})
            typed = (answer.structuredContent or {}).get("taskId")
            check(typed and not answer.isError, f"a task in {answer}")
            done = await outcome(session, typed, [])
            check(done.structuredContent == {"seconds": 5}, f"structured: {done}")
            print(f"5. slow_structured (it has an outputSchema) answered with its task {typed}; "
                  f"its outcome: {done.structuredContent}", flush=True)
    print("summary " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
