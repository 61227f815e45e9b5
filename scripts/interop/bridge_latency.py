"""Latency of a fast call (`greet`) to an upstream of protocol 2025-11-25,
three ways, in alternating rounds over keep-alive connections:

- direct:  a 2025-11-25 session straight to the upstream;
- passed:  the same session kind through the gateway (passed as it is);
- bridged: a 2026-07-28 request through the gateway's generation bridge.

    python bridge_latency.py UPSTREAM_URL GATEWAY_URL [CALLS] [ROUNDS]

Prints one line per way: the median and p90 in µs over every call, and the
bridged median against direct and against passed.
"""

from __future__ import annotations

import statistics
import sys
import time

import httpx

ACCEPT = "application/json, text/event-stream"


def session(client: httpx.Client, url: str) -> dict[str, str]:
    """Opens a 2025-11-25 session; the headers of its requests."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bridge-latency", "version": "1"},
        },
    }
    response = client.post(url, json=init, headers={"accept": ACCEPT})
    response.raise_for_status()
    headers = {
        "accept": ACCEPT,
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    client.post(url, json=note, headers=headers)
    return headers


def legacy_call(client: httpx.Client, url: str, headers: dict[str, str], n: int) -> None:
    body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "x"}}}
    text = client.post(url, json=body, headers=headers).text
    assert "Hello, x!" in text, text


def modern_call(client: httpx.Client, url: str, n: int) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {
            "name": "greet",
            "arguments": {"name": "x"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "accept": ACCEPT,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "greet",
    }
    text = client.post(url, json=body, headers=headers).text
    assert "Hello, x!" in text and '"resultType":"complete"' in text, text


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    upstream, gateway = sys.argv[1], sys.argv[2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    times: dict[str, list[float]] = {"direct": [], "passed": [], "bridged": []}
    with httpx.Client(timeout=30) as direct, httpx.Client(timeout=30) as passed, httpx.Client(timeout=30) as bridged:
        direct_headers = session(direct, upstream)
        passed_headers = session(passed, gateway)
        ways = {
            "direct": lambda n: legacy_call(direct, upstream, direct_headers, n),
            "passed": lambda n: legacy_call(passed, gateway, passed_headers, n),
            "bridged": lambda n: modern_call(bridged, gateway, n),
        }
        for way in ways.values():  # warm up connections and the session
            for n in range(20):
                way(n)
        for _ in range(rounds):
            for name, way in ways.items():
                for n in range(calls):
                    start = time.perf_counter()
                    way(n)
                    times[name].append((time.perf_counter() - start) * 1e6)
    medians = {}
    for name, values in times.items():
        values.sort()
        medians[name] = statistics.median(values)
        p90 = values[int(len(values) * 0.9)]
        print(f"{name:8} median {medians[name]:8.0f} µs  p90 {p90:8.0f} µs  ({len(values)} calls)")
    print(
        f"bridged/direct {medians['bridged'] / medians['direct']:.3f}x, "
        f"bridged/passed {medians['bridged'] / medians['passed']:.3f}x, "
        f"bridged - passed {medians['bridged'] - medians['passed']:+.0f} µs"
    )


if __name__ == "__main__":
    main()
