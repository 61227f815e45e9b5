"""The load of a chaos run: N clients speaking 2026-07-28 with the tasks
extension (sessionless: any gateway serves any request), each calling
`fast`, `slow_plain` and `slow_idem` in a mix with a unique `id`, and one
poller that reads every task handle given until it is terminal and, all
along, re-reads a sample of terminal ones (to catch a status that flips).

What is recorded, per call (`Load.calls`, by id) and per task handle
(`Load.tasks`, by task id), is what check.py counts.
"""

from __future__ import annotations

import asyncio
import json
import random
import time

import httpx

VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
}
TERMINAL = {"completed", "failed", "cancelled"}


class Refused(Exception):
    """The request reached no gateway (connection refused): safe to send again."""


def headers(method: str, name: str | None = None) -> dict[str, str]:
    found = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": VERSION,
        "mcp-method": method,
    }
    if name:
        found["mcp-name"] = name
    return found


def answer(response: httpx.Response, request_id: int) -> dict | None:
    """The JSON-RPC response to `request_id` in a JSON or SSE body."""
    if "text/event-stream" in response.headers.get("content-type", ""):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                try:
                    message = json.loads(line[5:])
                except ValueError:
                    continue
                if message.get("id") == request_id and ("result" in message or "error" in message):
                    return message
        return None
    try:
        return response.json()
    except ValueError:
        return None


class Load:
    def __init__(self, urls: list[str], clients: int, seed: int, max_runtime: float, log):
        self.urls, self.clients, self.seed, self.max_runtime, self.log = urls, clients, seed, max_runtime, log
        self.calls: dict[str, dict] = {}
        self.tasks: dict[str, dict] = {}
        self.next_id = 0
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(30, connect=2), limits=httpx.Limits(max_connections=64)
        )
        self.rng = random.Random(seed)
        self.polling = asyncio.Semaphore(16)

    async def post(self, method: str, params: dict, name: str | None = None, url: str | None = None):
        """(HTTP status, JSON-RPC response or None); raises Refused, or
        httpx's error when the request may have reached the gateway."""
        self.next_id += 1
        request_id = self.next_id
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": META}}
        url = url or self.rng.choice(self.urls)
        try:
            response = await self.http.post(url, json=body, headers=headers(method, name))
        except httpx.ConnectError as error:
            raise Refused(str(error)) from error
        return response.status_code, answer(response, request_id)

    # -- calls ---------------------------------------------------------

    async def call(self, tool: str, call_id: str, seconds: float | None) -> None:
        """One `tools/call`, sent again only while no gateway took it
        (refused, or `503` from a draining gateway), for up to 30 s."""
        arguments = {"id": call_id} if seconds is None else {"id": call_id, "seconds": seconds}
        record = {"id": call_id, "tool": tool, "seconds": seconds, "sent": time.time(), "outcome": None, "detail": ""}
        self.calls[call_id] = record
        deadline = time.monotonic() + 30
        while True:
            try:
                status, message = await self.post("tools/call", {"name": tool, "arguments": arguments}, tool)
            except Refused:
                if time.monotonic() > deadline:
                    record.update(outcome="refused", detail="no gateway took the call in 30 s")
                    return
                await asyncio.sleep(0.3)
                continue
            except httpx.HTTPError as error:
                record.update(outcome="no answer", detail=f"{type(error).__name__}: {error}")
                return
            if status == 503 and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
                continue
            break
        if message is None:
            record.update(outcome="error", detail=f"HTTP {status} without a JSON-RPC answer")
        elif "error" in message:
            error = message["error"]
            record.update(outcome="error", detail=f"HTTP {status} {error.get('code')} {error.get('message')}")
        elif message["result"].get("resultType") == "task":
            task_id = message["result"]["taskId"]
            record.update(outcome="handle", task=task_id)
            self.tasks[task_id] = {
                "id": call_id, "tool": tool, "created": time.time(), "terminal": None,
                "terminal_at": None, "detail": "", "flips": [], "unknown": 0, "store_errors": 0,
                "final": None, "done": asyncio.Event(),
            }
        else:
            result = message["result"]
            text = result_text(result)
            outcome = "sync error" if result.get("isError") else "sync ok" if text == f"{tool} {call_id}" else "sync wrong"
            record.update(outcome=outcome, detail=text[:200])

    async def client(self, number: int, until: float) -> None:
        rng = random.Random(self.seed * 1000 + number)
        sequence = 0
        while time.monotonic() < until:
            sequence += 1
            call_id = f"c{number}-{sequence}"
            draw = rng.random()
            tool = "fast" if draw < 0.3 else "slow_plain" if draw < 0.65 else "slow_idem"
            seconds = None
            if tool != "fast":
                seconds = round(rng.uniform(1, 6) if rng.random() < 0.7 else rng.uniform(6, 15), 2)
            await self.call(tool, call_id, seconds)
            task_id = self.calls[call_id].get("task")
            if task_id:
                # Wait for the poller to see the end, but keep the load going.
                left = max(0.1, min(25, until - time.monotonic()))
                try:
                    await asyncio.wait_for(self.tasks[task_id]["done"].wait(), left)
                except asyncio.TimeoutError:
                    pass
            elif self.calls[call_id]["outcome"] == "sync ok":
                await asyncio.sleep(rng.uniform(0.05, 0.3))
            else:  # e.g. the upstream is down: no spinning on errors
                await asyncio.sleep(rng.uniform(0.5, 1.5))

    # -- polling -------------------------------------------------------

    async def get(self, task_id: str) -> tuple[str, dict | str]:
        """("ok", task) | ("unknown", message) | ("error", what), trying the
        gateways for up to 15 s while none answers."""
        deadline = time.monotonic() + 15
        while True:
            try:
                status, message = await self.post("tasks/get", {"taskId": task_id})
            except (Refused, httpx.HTTPError) as error:
                if time.monotonic() > deadline:
                    return "error", f"unreachable: {type(error).__name__}"
                await asyncio.sleep(0.3)
                continue
            if status == 503 and time.monotonic() < deadline:
                await asyncio.sleep(0.3)
                continue
            if message is None:
                return "error", f"HTTP {status}"
            if "error" in message:
                error = message["error"]
                if error.get("code") == -32602 and "not found" in str(error.get("message", "")).lower():
                    return "unknown", error.get("message", "")
                return "error", f"{error.get('code')} {error.get('message')}"
            return "ok", message["result"]

    async def poll(self, task_id: str, final: bool = False) -> None:
        task = self.tasks[task_id]
        async with self.polling:
            kind, value = await self.get(task_id)
        if kind == "unknown":
            task["unknown"] += 1
            if final:
                task["final"] = "unknown"
            return
        if kind == "error":
            task["store_errors"] += 1
            if final:
                task["final"] = f"error: {value}"
            return
        status = value.get("status")
        if final:
            task["final"] = status
        if task["terminal"] is None:
            if status in TERMINAL:
                task.update(terminal=status, terminal_at=time.time(), detail=describe(task, value))
                task["done"].set()
        elif status != task["terminal"]:
            task["flips"].append(f"{task['terminal']} then {status}")
            self.log(f"FLIP task {task_id} ({task['tool']} {task['id']}): {task['terminal']} then {status}")

    async def poller(self, stop: asyncio.Event) -> None:
        """Reads every non-terminal task each second, plus up to 8 terminal
        ones picked at random, until `stop` is set."""
        while not stop.is_set():
            open_ids = [tid for tid, task in self.tasks.items() if task["terminal"] is None]
            ended = [tid for tid, task in self.tasks.items() if task["terminal"] is not None]
            sample = self.rng.sample(ended, min(8, len(ended)))
            await asyncio.gather(*(self.poll(tid) for tid in open_ids + sample))
            try:
                await asyncio.wait_for(stop.wait(), 1)
            except asyncio.TimeoutError:
                pass

    def open_count(self) -> int:
        return sum(1 for task in self.tasks.values() if task["terminal"] is None)

    async def final_pass(self) -> None:
        """Every handle read once more: its final status."""
        await asyncio.gather(*(self.poll(tid, final=True) for tid in list(self.tasks)))

    async def close(self) -> None:
        await self.http.aclose()


def result_text(result: dict) -> str:
    for item in result.get("content") or []:
        if item.get("type") == "text":
            return item.get("text", "")
    return ""


def describe(task: dict, value: dict) -> str:
    """What a terminal task says: `ok`, `wrong result: ...` or its error."""
    status = value.get("status")
    if status == "completed":
        result = value.get("result") or {}
        if result.get("isError"):
            return f"tool error: {result_text(result)[:200]}"
        if result_text(result) == f"{task['tool']} {task['id']}":
            return "ok"
        return f"wrong result: {json.dumps(result)[:200]}"
    error = value.get("error") or {}
    return str(error.get("message") or value.get("statusMessage") or status)[:200]
