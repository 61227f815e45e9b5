"""Raw-wire check of an upstream fixture: every conformance tool, both protocol generations.

Usage:
    python3 check_wire.py URL [SERVER_LOG]

URL is the fixture's `http://HOST:PORT/mcp`. With SERVER_LOG (the file the
fixture's stderr goes to), the cancellation checks also wait for the tool's
`slow_compute cancelled label=...` line; without it they only show that the
client side closed.

Standard library only (http.client), so it shows the bytes the server sent:
each call prints its Content-Type, the time of every notification and of the
answer, and the answer. Prints `N passed, N failed` last; exits 1 on a failure.
"""

from __future__ import annotations

import http.client
import json
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
CLIENT_INFO = {"name": "mcp-tasks-check-wire", "version": "0.1.0"}
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


@dataclass
class Reply:
    """One HTTP exchange: status, Content-Type, the messages in arrival order."""

    status: int
    content_type: str
    headers: dict[str, str]
    #: (seconds since the request was sent, JSON-RPC message)
    messages: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    @property
    def answer(self) -> dict[str, Any]:
        """The last message that has an `id` and a result or error."""
        for _, message in reversed(self.messages):
            if "result" in message or "error" in message:
                return message
        raise AssertionError(f"no answer among {self.messages}")

    def notifications(self, method: str) -> list[tuple[float, dict[str, Any]]]:
        return [(at, m) for at, m in self.messages if m.get("method") == method]

    def summary(self) -> str:
        kind = "SSE" if self.content_type.startswith("text/event-stream") else self.content_type or "-"
        times = ", ".join(f"{m.get('method', 'answer')}@{at:.2f}s" for at, m in self.messages)
        return f"HTTP {self.status} {kind}: {times}"


def sse_lines(response: http.client.HTTPResponse) -> Iterator[str]:
    """The lines of an SSE body as they arrive.

    `HTTPResponse.readline` on a chunked body waits for the next chunk's
    header before returning the last line of the current one, which would
    show every event one event late; so the chunks are read here directly.
    """
    pending = b""

    def pieces() -> Iterator[bytes]:
        if not response.chunked:
            while piece := response.read1(65536):
                yield piece
            return
        while True:
            size = int(response.fp.readline().split(b";")[0], 16)
            if size == 0:
                return
            yield response.fp.read(size)
            response.fp.readline()  # the CRLF after the chunk

    for piece in pieces():
        pending += piece
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.decode().rstrip("\r")


class Client:
    """Sends JSON-RPC requests over plain HTTP/1.1, one connection each."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname, parts.port or 80, parts.path or "/"
        self.session: str | None = None
        self.next_id = 0

    def send(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[http.client.HTTPConnection, float]:
        """POSTs `body` on a new connection; returns it and when the request went out."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        all_headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        }
        if self.session:
            all_headers["Mcp-Session-Id"] = self.session
        started = time.monotonic()
        connection.request("POST", self.path, json.dumps(body), all_headers)
        return connection, started

    def open(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[http.client.HTTPConnection, Any, float]:
        """POSTs `body` and waits for the response head."""
        connection, started = self.send(body, headers)
        return connection, connection.getresponse(), started

    def exchange(
        self,
        body: dict[str, Any],
        headers: dict[str, str],
        on_request: Callable[[dict[str, Any]], None] | None = None,
        stop_after: int | None = None,
    ) -> Reply:
        """POSTs `body` and reads the reply; `stop_after` closes after that many SSE messages."""
        connection, response, started = self.open(body, headers)
        reply = Reply(response.status, response.getheader("Content-Type", ""), dict(response.getheaders()))
        if reply.content_type.startswith("text/event-stream"):
            data: list[str] = []
            for line in sse_lines(response):
                if line.startswith("data:"):
                    data.append(line[5:].lstrip())
                elif line == "" and data:
                    message = json.loads("\n".join(data))
                    data = []
                    reply.messages.append((time.monotonic() - started, message))
                    if "method" in message and "id" in message and on_request:
                        on_request(message)  # a server-to-client request (legacy elicitation)
                    if stop_after is not None and len(reply.messages) >= stop_after:
                        break
                    if message.get("id") == body.get("id") and "method" not in message:
                        break
        else:
            raw = response.read()
            if raw:
                reply.messages.append((time.monotonic() - started, json.loads(raw)))
        connection.close()  # closing the socket is how a 2026-07-28 client cancels
        return reply

    def abandon(self, body: dict[str, Any], headers: dict[str, str], after: float) -> None:
        """POSTs `body`, reads nothing, and closes the connection `after` seconds later."""
        connection, _ = self.send(body, headers)
        time.sleep(after)
        connection.close()

    def request_id(self) -> int:
        self.next_id += 1
        return self.next_id


def modern_request(
    client: Client,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    declare_tasks: bool = False,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Body and headers of a stateless 2026-07-28 request: routing headers and the `_meta` envelope."""
    params = dict(params or {})
    capabilities: dict[str, Any] = {"elicitation": {"form": {}}}
    if declare_tasks:
        capabilities["extensions"] = {TASKS_EXTENSION: {}}
    params["_meta"] = {
        **params.get("_meta", {}),
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": client.request_id(), "method": method, "params": params}
    return body, headers


def modern_call(
    client: Client, method: str, params: dict[str, Any] | None = None, *, stop_after: int | None = None, **options: Any
) -> Reply:
    """A stateless 2026-07-28 exchange (no initialize); `options` go to `modern_request`."""
    body, headers = modern_request(client, method, params, **options)
    return client.exchange(body, headers, stop_after=stop_after)


def tool_call(client: Client, tool: str, arguments: dict[str, Any], **extra: Any) -> Reply:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    for key in ("inputResponses", "requestState", "_meta", "task"):
        if key in extra:
            params[key] = extra.pop(key)
    return modern_call(client, "tools/call", params, name=tool, **extra)


def text_of(answer: dict[str, Any]) -> str:
    return " ".join(block.get("text", "") for block in answer["result"].get("content", []))


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


class Checks:
    """Runs named checks, prints one line each, counts the outcome."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def run(self, name: str, check: Callable[[], str]) -> None:
        try:
            detail = check()
            self.passed += 1
            print(f"PASS {name}: {detail}", flush=True)
        except Exception as error:  # a failed check, whatever broke
            self.failed += 1
            print(f"FAIL {name}: {type(error).__name__}: {error}", flush=True)


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def wait_for_log(server_log: str | None, needle: str, timeout: float = 3.0) -> str:
    """How long until `needle` shows up in the server's log, or why it was not looked for."""
    if server_log is None:
        return "no server log given"
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        with open(server_log, encoding="utf-8", errors="replace") as log:
            if needle in log.read():
                return f"server logged `{needle}` within {time.monotonic() - started:.2f}s"
        time.sleep(0.05)
    raise AssertionError(f"server did not log `{needle}` within {timeout}s")


# --- 2026-07-28 ------------------------------------------------------------------


def modern_checks(url: str, server_log: str | None, checks: Checks) -> None:
    client = Client(url)

    def discover() -> str:
        reply = modern_call(client, "server/discover")
        result = reply.answer["result"]
        capabilities = result.get("capabilities", {})
        expect("tasks" not in capabilities, f"capabilities.tasks present: {capabilities}")
        expect(TASKS_EXTENSION not in capabilities.get("extensions", {}), "tasks extension advertised")
        return f"{reply.summary()}; versions={result.get('supportedVersions')} capabilities={sorted(capabilities)}"

    def tools_list() -> str:
        reply = modern_call(client, "tools/list")
        tools = {tool["name"]: tool for tool in reply.answer["result"]["tools"]}
        wanted = {
            "greet",
            "slow_compute",
            "failing_job",
            "protocol_error_job",
            "confirm_delete",
            "multi_input",
            "test_tool_with_task",
        }
        expect(wanted <= set(tools), f"missing {wanted - set(tools)}")
        stray = [name for name, tool in tools.items() if "execution" in tool or "outputSchema" in tool]
        expect(not stray, f"execution/outputSchema on {stray}")
        return f"{sorted(tools)}"

    def greet() -> str:
        reply = tool_call(client, "greet", {"name": "sep-2243"})
        expect(text_of(reply.answer) == "Hello, sep-2243!", f"text {text_of(reply.answer)!r}")
        expect(reply.answer["result"].get("resultType") == "complete", f"resultType in {reply.answer}")
        return f"{reply.summary()}; {reply.answer['result']}"

    def greet_declaring() -> str:
        # The fixture knows nothing about tasks: a declaring request is answered the same way.
        reply = tool_call(client, "greet", {"name": "x"}, declare_tasks=True, task={"ttl": 1000})
        expect(text_of(reply.answer) == "Hello, x!", f"answer {reply.answer}")
        return reply.summary()

    def slow_with_progress() -> str:
        reply = tool_call(client, "slow_compute", {"seconds": 1, "label": "p"}, _meta={"progressToken": "tok-1"})
        progress = reply.notifications("notifications/progress")
        expect(reply.content_type.startswith("text/event-stream"), f"content type {reply.content_type}")
        expect(len(progress) >= 4, f"{len(progress)} progress notifications")
        expect(all(m["params"]["progressToken"] == "tok-1" for _, m in progress), "wrong progressToken")
        expect(text_of(reply.answer) == "p done after 1s", f"answer {reply.answer}")
        return reply.summary()

    def slow_without_progress() -> str:
        reply = tool_call(client, "slow_compute", {"seconds": 1})
        expect(not reply.notifications("notifications/progress"), "progress without a token")
        expect(reply.content_type.startswith("application/json"), f"content type {reply.content_type}")
        return f"{reply.summary()}; {text_of(reply.answer)!r}"

    def failing() -> str:
        reply = tool_call(client, "failing_job", {})
        at = reply.messages[-1][0]
        expect(reply.answer["result"].get("isError") is True, f"answer {reply.answer}")
        expect(0.9 <= at < 2.0, f"answered after {at:.2f}s")
        return f"{reply.summary()}; {reply.answer['result']}"

    def protocol_error() -> str:
        reply = tool_call(client, "protocol_error_job", {})
        error = reply.answer.get("error")
        expect(error is not None and error["code"] == -32603, f"answer {reply.answer}")
        return f"{reply.summary()}; {reply.answer}"

    def confirm_delete() -> str:
        first = tool_call(client, "confirm_delete", {"filename": "a.txt"})
        result = first.answer["result"]
        expect(result.get("resultType") == "input_required", f"round 1 {result}")
        request = result["inputRequests"]["confirm"]
        expect(request["method"] == "elicitation/create", f"request {request}")
        second = tool_call(
            client,
            "confirm_delete",
            {"filename": "a.txt"},
            inputResponses={"confirm": accept(confirm=True)},
            requestState=result["requestState"],
        )
        expect(text_of(second.answer).startswith("Deleted a.txt"), f"round 2 {second.answer}")
        return f"round 1 {json.dumps(result)[:200]}...; round 2 {text_of(second.answer)!r}"

    def confirm_delete_tampered() -> str:
        first = tool_call(client, "confirm_delete", {"filename": "a.txt"})
        state = first.answer["result"]["requestState"]
        # The same state for other arguments: the SDK binds requestState to the call.
        other = tool_call(
            client,
            "confirm_delete",
            {"filename": "b.txt"},
            inputResponses={"confirm": accept(confirm=True)},
            requestState=state,
        )
        expect("error" in other.answer, f"state accepted for other arguments: {other.answer}")
        return f"{other.answer['error']}"

    def multi_input() -> str:
        first = tool_call(client, "multi_input", {}).answer["result"]
        expect(sorted(first.get("inputRequests", {})) == ["first", "second"], f"round 1 {first}")
        second = tool_call(
            client, "multi_input", {}, inputResponses={"first": accept(value="one")}, requestState=first["requestState"]
        ).answer["result"]
        expect(sorted(second.get("inputRequests", {})) == ["second"], f"partial round {second}")
        third = tool_call(
            client,
            "multi_input",
            {},
            inputResponses={"second": accept(value="two")},
            requestState=second["requestState"],
        )
        expect("one" in text_of(third.answer) and "two" in text_of(third.answer), f"round 3 {third.answer}")
        both = tool_call(
            client,
            "multi_input",
            {},
            inputResponses={"first": accept(value="1"), "second": accept(value="2")},
            requestState=first["requestState"],
        )
        expect(text_of(both.answer).startswith("multi_input done"), f"both at once {both.answer}")
        return f"one at a time and both at once: {text_of(third.answer)!r}"

    def with_task() -> str:
        first = tool_call(client, "test_tool_with_task", {}).answer["result"]
        expect(first.get("resultType") == "input_required" and "name" in first["inputRequests"], f"{first}")
        second = tool_call(
            client,
            "test_tool_with_task",
            {},
            inputResponses={"name": accept(name="Alice")},
            requestState=first["requestState"],
        )
        at = second.messages[-1][0]
        expect("Alice" in text_of(second.answer), f"round 2 {second.answer}")
        expect(at >= 1.4, f"round 2 answered after {at:.2f}s")
        return f"{second.summary()}; {text_of(second.answer)!r}"

    def cancel(progress: bool) -> Callable[[], str]:
        def check() -> str:
            label = f"cancel-{uuid.uuid4().hex[:8]}"
            meta = {"_meta": {"progressToken": label}} if progress else {}
            if progress:
                # Read the first progress event, then close the socket.
                reply = tool_call(client, "slow_compute", {"seconds": 60, "label": label}, stop_after=1, **meta)
                expect(bool(reply.notifications("notifications/progress")), f"no progress: {reply.summary()}")
            else:
                # No token: nothing is sent before the answer; close while the head is still pending.
                body, headers = modern_request(
                    client,
                    "tools/call",
                    {"name": "slow_compute", "arguments": {"seconds": 60, "label": label}},
                    name="slow_compute",
                )
                client.abandon(body, headers, after=1.0)
            return wait_for_log(server_log, f"slow_compute cancelled label={label}")

        return check

    for name, check in [
        ("modern server/discover", discover),
        ("modern tools/list", tools_list),
        ("modern greet", greet),
        ("modern greet, tasks declared", greet_declaring),
        ("modern slow_compute with progressToken", slow_with_progress),
        ("modern slow_compute without progressToken", slow_without_progress),
        ("modern failing_job", failing),
        ("modern protocol_error_job", protocol_error),
        ("modern confirm_delete (MRTR)", confirm_delete),
        ("modern confirm_delete, requestState of other arguments", confirm_delete_tampered),
        ("modern multi_input (MRTR)", multi_input),
        ("modern test_tool_with_task (MRTR)", with_task),
        ("modern cancel by closing the SSE stream", cancel(progress=True)),
        ("modern cancel by closing before any byte", cancel(progress=False)),
    ]:
        checks.run(name, check)


# --- 2025-11-25 sessions -------------------------------------------------------------


def legacy_checks(url: str, server_log: str | None, checks: Checks) -> None:
    client = Client(url)
    headers: dict[str, str] = {}

    def send(method: str, params: dict[str, Any] | None = None, **options: Any) -> Reply:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": client.request_id(), "method": method}
        if params is not None:
            body["params"] = params
        return client.exchange(body, headers, **options)

    def notify(method: str, params: dict[str, Any] | None = None) -> int:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        connection, response, _ = client.open(body, headers)
        response.read()
        connection.close()
        return response.status

    def answer_elicitation(answers: dict[str, dict[str, Any]]) -> Callable[[dict[str, Any]], None]:
        """Answers each elicitation/create on the stream by POSTing the response to the session."""

        def on_request(message: dict[str, Any]) -> None:
            schema_keys = list(message["params"]["requestedSchema"]["properties"])
            result = answers[message["params"]["message"]]
            expect(set(result.get("content", {})) <= set(schema_keys), f"schema {schema_keys}")
            connection, response, _ = client.open({"jsonrpc": "2.0", "id": message["id"], "result": result}, headers)
            response.read()
            connection.close()

        return on_request

    def initialize() -> str:
        reply = send(
            "initialize",
            {
                "protocolVersion": LEGACY,
                "clientInfo": CLIENT_INFO,
                "capabilities": {"elicitation": {"form": {}}},
            },
        )
        client.session = reply.headers.get("mcp-session-id") or reply.headers.get("Mcp-Session-Id")
        expect(client.session is not None, f"no session id: {reply.headers}")
        result = reply.answer["result"]
        expect(result["protocolVersion"] == LEGACY, f"negotiated {result['protocolVersion']}")
        expect("tasks" not in result["capabilities"], f"capabilities.tasks: {result['capabilities']}")
        headers["MCP-Protocol-Version"] = LEGACY
        status = notify("notifications/initialized")
        return f"{reply.summary()}; session {client.session[:8]}..., initialized -> HTTP {status}"

    def greet() -> str:
        reply = send("tools/call", {"name": "greet", "arguments": {"name": "legacy"}})
        expect(text_of(reply.answer) == "Hello, legacy!", f"answer {reply.answer}")
        return f"{reply.summary()}; {reply.answer['result']}"

    def greet_with_task_param() -> str:
        # A server that does not support tasks must ignore params.task.
        reply = send("tools/call", {"name": "greet", "arguments": {"name": "t"}, "task": {"ttl": 60000}})
        expect(text_of(reply.answer) == "Hello, t!", f"answer {reply.answer}")
        return reply.summary()

    def slow_with_progress() -> str:
        reply = send("tools/call", {"name": "slow_compute", "arguments": {"seconds": 1}, "_meta": {"progressToken": 7}})
        progress = reply.notifications("notifications/progress")
        expect(len(progress) >= 4, f"{len(progress)} progress notifications")
        return reply.summary()

    def failing() -> str:
        reply = send("tools/call", {"name": "failing_job", "arguments": {}})
        expect(reply.answer["result"].get("isError") is True, f"answer {reply.answer}")
        return f"{reply.summary()}; {reply.answer['result']}"

    def protocol_error() -> str:
        reply = send("tools/call", {"name": "protocol_error_job", "arguments": {}})
        expect(reply.answer.get("error", {}).get("code") == -32603, f"answer {reply.answer}")
        return f"{reply.answer}"

    def confirm_delete() -> str:
        reply = send(
            "tools/call",
            {"name": "confirm_delete", "arguments": {"filename": "a.txt"}},
            on_request=answer_elicitation({"Delete a.txt?": accept(confirm=True)}),
        )
        expect(text_of(reply.answer).startswith("Deleted a.txt"), f"answer {reply.answer}")
        return f"{reply.summary()}; {text_of(reply.answer)!r}"

    def multi_input() -> str:
        reply = send(
            "tools/call",
            {"name": "multi_input", "arguments": {}},
            on_request=answer_elicitation({"First value?": accept(value="one"), "Second value?": accept(value="two")}),
        )
        expect("one" in text_of(reply.answer) and "two" in text_of(reply.answer), f"answer {reply.answer}")
        return f"{reply.summary()}"

    def with_task() -> str:
        reply = send(
            "tools/call",
            {"name": "test_tool_with_task", "arguments": {}},
            on_request=answer_elicitation({"What is your name?": accept(name="Alice")}),
        )
        expect("Alice" in text_of(reply.answer), f"answer {reply.answer}")
        return f"{reply.summary()}; {text_of(reply.answer)!r}"

    def no_elicitation() -> str:
        # A second session whose client cannot answer elicitation/create.
        other = Client(url)
        reply = other.exchange(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": LEGACY, "clientInfo": CLIENT_INFO, "capabilities": {}},
            },
            {},
        )
        other.session = reply.headers.get("mcp-session-id")
        reply = other.exchange(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "confirm_delete", "arguments": {"filename": "a.txt"}},
            },
            {"MCP-Protocol-Version": LEGACY},
        )
        expect(reply.answer["result"].get("isError") is True, f"answer {reply.answer}")
        return f"{reply.summary()}; {text_of(reply.answer)!r}"

    def cancel_notification() -> str:
        label = f"cancel-{uuid.uuid4().hex[:8]}"
        request_id = client.request_id()
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {
                "name": "slow_compute",
                "arguments": {"seconds": 60, "label": label},
                "_meta": {"progressToken": label},
            },
        }
        connection, response, _ = client.open(body, headers)
        response.readline()  # the stream is open and the tool runs
        status = notify("notifications/cancelled", {"requestId": request_id, "reason": "check_wire"})
        found = wait_for_log(server_log, f"slow_compute cancelled label={label}")
        connection.close()
        return f"notifications/cancelled -> HTTP {status}; {found}"

    def close_is_not_cancel() -> str:
        # 2025-11-25: a disconnect SHOULD NOT be read as cancellation, so the
        # tool runs on (its answer is lost) until it finishes.
        label = f"close-{uuid.uuid4().hex[:8]}"
        send(
            "tools/call",
            {"name": "slow_compute", "arguments": {"seconds": 1, "label": label}, "_meta": {"progressToken": label}},
            stop_after=1,
        )
        found = wait_for_log(server_log, f"slow_compute finished label={label}")
        if server_log is not None:
            with open(server_log, encoding="utf-8", errors="replace") as log:
                expect(f"cancelled label={label}" not in log.read(), "the close cancelled the tool")
        return found

    for name, check in [
        ("legacy initialize", initialize),
        ("legacy greet", greet),
        ("legacy greet with params.task", greet_with_task_param),
        ("legacy slow_compute with progressToken", slow_with_progress),
        ("legacy failing_job", failing),
        ("legacy protocol_error_job", protocol_error),
        ("legacy confirm_delete (elicitation/create)", confirm_delete),
        ("legacy multi_input (elicitation/create)", multi_input),
        ("legacy test_tool_with_task (elicitation/create)", with_task),
        ("legacy confirm_delete without the elicitation capability", no_elicitation),
        ("legacy cancel by notifications/cancelled", cancel_notification),
        ("legacy closing the SSE stream does not cancel", close_is_not_cancel),
    ]:
        checks.run(name, check)


def main() -> None:
    if len(sys.argv) not in (2, 3) or sys.argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    url = sys.argv[1]
    server_log = sys.argv[2] if len(sys.argv) == 3 else None
    checks = Checks()
    modern_checks(url, server_log, checks)
    legacy_checks(url, server_log, checks)
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
