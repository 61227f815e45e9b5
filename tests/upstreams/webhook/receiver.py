"""A webhook receiver for task events (MCP Events extension), over HTTPS
with a certificate of its own, that checks every delivery's Standard
Webhooks signature with Python's own `hmac` and `hashlib` (an
implementation independent of the gateway's).

Usage:
    python receiver.py --cert CERT --key KEY --secret whsec_... [--fail N] [--port P] HOST

- answers a `verification` body with `{"challenge": ...}` (signature checked too);
- answers 500 to the first N tries of each event id (`--fail`, default 0),
  then 204;
- answers 401 to a delivery whose signature does not verify, or whose
  timestamp is more than 5 minutes away;
- prints `listening on https://HOST:PORT/hook` once it accepts, then one
  JSON line per POST on stdout:
  `{"kind": "event"|"verification"|"gap", "id": webhook-id, "try": n,
    "status": answered status, "verified": bool, "body": parsed body,
    "subscription": X-MCP-Subscription-Id}`.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE = 300


def verify(secret: str, headers, body: bytes) -> bool:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    msg_id = headers.get("webhook-id", "")
    stamp = headers.get("webhook-timestamp", "")
    if not stamp.isdigit() or abs(time.time() - int(stamp)) > TOLERANCE:
        return False
    signed = f"{msg_id}.{stamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    given = [part.split(",", 1)[1] for part in headers.get("webhook-signature", "").split() if part.startswith("v1,")]
    return any(hmac.compare_digest(expected, candidate) for candidate in given)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--fail", type=int, default=0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("host")
    args = parser.parse_args()
    tries: dict[str, int] = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_):  # quiet: stdout carries the record
            pass

        def do_POST(self):  # noqa: N802 (the standard library's name)
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            msg_id = self.headers.get("webhook-id", "")
            ok = verify(args.secret, self.headers, body)
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
            kind = parsed.get("type", "event") if isinstance(parsed, dict) else "event"
            with lock:
                tries[msg_id] = tries.get(msg_id, 0) + 1
                attempt = tries[msg_id]
            answer = b""
            if not ok:
                status = 401
            elif kind == "verification":
                status = 200
                answer = json.dumps({"challenge": parsed["challenge"]}).encode()
            elif kind == "event" and attempt <= args.fail:
                status = 500
            else:
                status = 204
            record = {
                "kind": kind,
                "id": msg_id,
                "try": attempt,
                "status": status,
                "verified": ok,
                "body": parsed,
                "subscription": self.headers.get("x-mcp-subscription-id"),
            }
            print(json.dumps(record), flush=True)
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    host, port = server.server_address[:2]
    print(f"listening on https://{host}:{port}/hook", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
