"""Serving a FastMCP app over HTTP on a socket the caller names, for the
Python upstream fixtures (`fixture.py` here and `../python-tasks/fixture.py`).

`serve(app, "HOST:PORT")` binds first (port 0 picks a free port), then runs
uvicorn on that socket and prints `listening on http://HOST:PORT/mcp` (the
real port) on stdout once the app's lifespan ran and it accepts.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

import uvicorn


def bind(address: str) -> tuple[socket.socket, str]:
    """A listening socket for `HOST:PORT` (port 0: any free one) and its URL."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        sys.exit(f"usage: {sys.argv[0]} HOST:PORT")
    host = host.strip("[]")
    family, kind, proto, _, sockaddr = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(sockaddr)
    sock.listen(128)
    real_port = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    return sock, f"http://{shown}:{real_port}/mcp"


async def serve(app: Any, address: str) -> None:
    """Serves the ASGI `app` at `address` until the process is stopped."""
    sock, url = bind(address)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)

    async def announce() -> None:
        # uvicorn sets `started` once the app's lifespan ran and it accepts.
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.02)
        print(f"listening on {url}", flush=True)

    announcer = asyncio.create_task(announce())
    await server.serve(sockets=[sock])
    announcer.cancel()
