"""A stdio MCP server that misbehaves, for the gateway's stdio tests (no
packages needed): it answers `initialize`, then writes a line that is not
JSON, lists no tools, answers `tools/call` of `echo` at once, and exits with status 3 on
`tools/call` of `crash`, without answering. It reads one line at a time:
`hold` sleeps `seconds` before it answers, blocking every other call;
`pid` and `hold` answer with its process id; `big` answers with a line of
`bytes` bytes and its id last, as TypeScript servers write it;
`silent` (and any method it does not know) is never answered; `close_stdout`
closes its standard output and then lives on without a word. Every
`notifications/cancelled` it gets is written to stderr as `cancelled ID`.

Usage: python3 stdio_misbehaving.py
"""

import json
import os
import sys
import time


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "misbehaving", "version": "1"}}})
        sys.stdout.write("this line is not JSON\n")
        sys.stdout.flush()
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})
    elif method == "tools/call" and message["params"]["name"] == "crash":
        print("crashing on purpose", file=sys.stderr, flush=True)
        sys.exit(3)
    elif method == "notifications/cancelled":
        print(f"cancelled {message['params'].get('requestId')}", file=sys.stderr, flush=True)
    elif method == "tools/call" and message["params"]["name"] == "silent":
        print("silent", file=sys.stderr, flush=True)
    elif method == "tools/call" and message["params"]["name"] == "close_stdout":
        sys.stdout.flush()
        os.close(1)
        print("stdout closed", file=sys.stderr, flush=True)
        time.sleep(600)
    elif method == "tools/call" and message["params"]["name"] == "big":
        size = message["params"].get("arguments", {}).get("bytes", 10_000)
        send({"jsonrpc": "2.0", "result": {
            "content": [{"type": "text", "text": "x" * size}], "isError": False},
            "id": message["id"]})
    elif method == "tools/call" and message["params"]["name"] in ("pid", "hold"):
        if message["params"]["name"] == "hold":
            print("holding", file=sys.stderr, flush=True)
            time.sleep(message["params"].get("arguments", {}).get("seconds", 1))
        send({"jsonrpc": "2.0", "id": message["id"], "result": {
            "content": [{"type": "text", "text": str(os.getpid())}], "isError": False}})
    elif method == "tools/call":
        text = message["params"].get("arguments", {}).get("text", "")
        send({"jsonrpc": "2.0", "id": message["id"], "result": {
            "content": [{"type": "text", "text": text}], "isError": False}})
