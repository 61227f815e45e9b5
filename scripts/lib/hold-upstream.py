#!/usr/bin/env python3
"""An HTTP upstream that takes every request and never answers.

Run by scripts/gateway-bench.sh for its memory case with working tasks:
`hold-upstream.py 127.0.0.1:0` listens (port 0: a free one), prints
`listening on http://HOST:PORT`, accepts any number of connections, reads
and discards what arrives on them, and answers nothing, until the client
hangs up or the process is stopped.

To the gateway in front of it, every call looks like a `tools/call` still
running on a Streamable-HTTP server that answers with JSON: such a server
sends its response head only once the tool is done. So a task parked
through the gateway stays `working` and holds its upstream connection,
for as long as the benchmark wants, without the upstream doing any work.
The rmcp bench server (benches/http_server.rs) cannot stand in here: it
serves at most 512 connections at once (examples/support/http.rs), and a
working task holds one.

Only the Python standard library is used. The open-file limit of the
process is raised to its hard limit, as each held connection is a file.
"""

import asyncio
import resource
import sys

# The held connections (their writers), kept so that none is collected.
HELD = set()


async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Reads and discards until the client closes; never writes."""
    HELD.add(writer)
    try:
        while await reader.read(65536):
            pass
    except ConnectionError:
        pass
    finally:
        HELD.discard(writer)
        writer.close()


async def main(address: str) -> None:
    host, _, port = address.rpartition(":")
    server = await asyncio.start_server(hold, host, int(port), backlog=4096)
    bound = server.sockets[0].getsockname()
    print(f"listening on http://{bound[0]}:{bound[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: hold-upstream.py HOST:PORT")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        asyncio.run(main(sys.argv[1]))
    except KeyboardInterrupt:
        pass
