"""What a waiting input round costs the gateway: N 2026-07-28 calls of a
tool whose server asks a question (`confirm`, an elicitation of the Python
SDK 1.30 server), each answered `input_required` by the gateway's bridge,
which then holds the call's upstream stream until the client's retry.

    python bridge_rounds.py GATEWAY_URL GATEWAY_PID [N]

Reads the gateway's resident memory (/proc/PID/status) before the calls,
once all N rounds wait, and after every round was answered by a retry, and
prints one line each, with the memory per waiting round; exits 1 when a
call got no round or a retry no answer.
"""

from __future__ import annotations

import asyncio
import sys

import httpx

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "bridge-rounds", "version": "1"},
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "confirm",
}


def rss_kib(pid: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit("no VmRSS")


def answer_of(response: httpx.Response) -> dict:
    """The JSON-RPC response in a JSON or SSE body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data: ") and '"id"' in line:
                import json

                message = json.loads(line[6:])
                if "result" in message or "error" in message:
                    return message
        raise ValueError(f"no answer in {response.text[:200]!r}")
    return response.json()


async def call(client: httpx.AsyncClient, url: str, at: int, extra: dict) -> dict:
    params = {"name": "confirm", "arguments": {"question": f"call {at}?"}, "_meta": META, **extra}
    body = {"jsonrpc": "2.0", "id": at, "method": "tools/call", "params": params}
    response = await client.post(url, json=body, headers=HEADERS)
    return answer_of(response)


async def main(url: str, pid: str, count: int) -> None:
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await call(client, url, 0, {})  # warms the sessions up; its round is left to expire
        before = rss_kib(pid)
        asked = await asyncio.gather(*(call(client, url, at, {}) for at in range(1, count + 1)))
        states = [a.get("result", {}).get("requestState") for a in asked]
        if not all(states):
            raise SystemExit(f"a call got no round: {next(a for a, s in zip(asked, states) if not s)}")
        waiting = rss_kib(pid)
        print(f"gateway RSS before: {before} KiB; with {count} rounds waiting: {waiting} KiB "
              f"({(waiting - before) * 1024 / count:.0f} bytes a round)")
        answers = [{"inputResponses": {"elicitation": {"action": "accept", "content": {"ok": True}}},
                    "requestState": state} for state in states]
        done = await asyncio.gather(*(call(client, url, at + 1, extra) for at, extra in enumerate(answers)))
        texts = [d.get("result", {}).get("content", [{}])[0].get("text") for d in done]
        if any(text != "answered: yes" for text in texts):
            raise SystemExit(f"a retry got no answer: {next(d for d, t in zip(done, texts) if t != 'answered: yes')}")
        print(f"gateway RSS once all {count} retries were answered: {rss_kib(pid)} KiB")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 100))
