"""The official MCP conformance suite's server fixtures on an ordinary MCP
server of the official Python SDK 1.x (PyPI `mcp` 1.30.0, its low-level
`Server`): protocol 2025-11-25 and older, sessions, no tasks, no MRTR and
no 2026-07-28. The gateway's generation bridge serves the suite's
2026-07-28 scenarios from it; run directly, it serves the suite's
2025-11-25 scenarios.

Every tool, prompt and resource the suite's server scenarios call by name
(`@modelcontextprotocol/conformance` 0.2.0-alpha.12, including the tasks
extension's) is here, with the outputs the suite checks. Where a scenario
expects an MRTR `input_required` result, the fixture does what a server of
this generation does instead: it asks the client with a real request
(`elicitation/create`, `sampling/createMessage`, `roots/list`) in the
call's session, on the call's stream, and waits for the answer. It asks
only when the session's client declared the capability; otherwise the
call ends with an `isError` result saying what it needed (`test_missing_capability`
and the prompt `test_input_required_result_prompt` answer the JSON-RPC
error -32021 instead). Questions asked together are sent at once.

| Name | Kind | Behaviour |
|------|------|-----------|
| `test_simple_text`, `test_image_content`, `test_audio_content`, `test_embedded_resource`, `test_multiple_content_types` | tool | the fixed contents the suite expects |
| `test_error_handling` | tool | an `isError` result |
| `test_tool_with_progress` | tool | progress 0, 50, 100 of 100 (50 ms apart) when given a progressToken |
| `test_tool_with_logging`, `test_logging_tool` | tool | `notifications/message` (info) during the call |
| `test_streaming_elicitation` | tool | a progress notification, then its result |
| `test_sampling`, `test_elicitation`, `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums` | tool | one request to the client, its answer reported |
| `json_schema_2020_12_tool` | tool | listed with a raw JSON Schema 2020-12 inputSchema |
| `test_missing_capability` | tool | -32021 when the client declared no sampling; else samples |
| `test_input_required_result_*` | tool | the suite's MRTR questions, asked as requests (see above) |
| `test_param_header` | tool | echoes `region`, annotated `x-mcp-header: Region` (SEP-2243), which the fixture itself does not check |
| `test_trigger_tool_change`, `test_trigger_prompt_change` | tool | `notifications/{tools,prompts}/list_changed` |
| `greet` | tool | `Hello, {name}!` at once |
| `slow_compute` | tool | sleeps `seconds`; progress every 200 ms when asked; cancellable |
| `failing_job` | tool | about 1 s (or `seconds`), then an `isError` result |
| `protocol_error_job` | tool | after `seconds` (default 0), the JSON-RPC error -32603 |
| `confirm_delete` | tool | asks `confirm`, then reports the answer |
| `multi_input` | tool | asks two values at once |
| `test_tool_with_task` | tool | asks `name`, then works 1.5 s and greets the name |
| `test_simple_prompt`, `test_prompt_with_arguments`, `test_prompt_with_embedded_resource`, `test_prompt_with_image` | prompt | the fixed messages the suite expects |
| `test_input_required_result_prompt` | prompt | asks a context, then a message naming it |
| `test://static-text`, `test://static-binary`, `test://watched-resource`, `test://template/{id}/data` | resource | the fixed contents; an unknown URI gets -32602 with `data.uri` |

Also `completion/complete`, `logging/setLevel` and `resources/subscribe`
and `unsubscribe`, as a 2025-11-25 server has them.

Usage:
    python conformance.py HOST:PORT      # Streamable HTTP with sessions; port 0 picks a free port
    python conformance.py --port PORT    # the same on 127.0.0.1
    python conformance.py --stdio        # one session over stdin and stdout

Prints `listening on http://HOST:PORT/mcp` (the real port) once it accepts;
logs go to stderr, among them `slow_compute started|finished|cancelled
label=...`. HTTP requests must name a loopback host (DNS-rebinding
protection, as the SDK sets it up for a local server).

This file is the entry point; the fixture itself is the package
`conformance_fixture/` beside it (its `__init__` says which module holds
what).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

import anyio

HERE = os.path.dirname(os.path.abspath(__file__))
# Leave no __pycache__ in the source tree.
sys.dont_write_bytecode = True
# The package beside this file and the shared uvicorn runner, whatever the
# working directory.
sys.path[:0] = [HERE, os.path.join(HERE, "..", "python")]

import conformance_fixture  # noqa: E402,F401  (importing it registers every tool, prompt and resource)
from conformance_fixture.transport import http_app, run_stdio  # noqa: E402
from serving import serve  # noqa: E402  (the shared uvicorn runner)


def main() -> None:
    args = sys.argv[1:]
    if args in (["-h"], ["--help"]):
        print(__doc__)
        return
    if len(args) == 2 and args[0] == "--port" and args[1].isdigit():
        args = [f"127.0.0.1:{args[1]}"]
    if len(args) != 1:
        sys.exit(__doc__)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    # The SDK logs every request at INFO.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    if args[0] == "--stdio":
        anyio.run(run_stdio)
        return
    asyncio.run(serve(http_app(), args[0]))


if __name__ == "__main__":
    main()
