"""The fixture's tool registry: the `@tool` decorator every tools module
uses, `tools/list` over what it registered, and `tools/call`, which turns
a tool's failure into an `isError` result but lets an `McpError` reach the
wire as a JSON-RPC error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp.types as types
from mcp.shared.exceptions import McpError

from .asking import NotDeclared
from .base import log, server, text_result

Handler = Callable[[dict[str, Any]], Awaitable[types.CallToolResult]]

#: name -> (definition, handler), in the order `tools/list` shows them.
TOOLS: dict[str, tuple[types.Tool, Handler]] = {}

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


def tool(name: str, description: str, schema: dict[str, Any] | None = None) -> Callable[[Handler], Handler]:
    """Registers a tool: `handler(arguments)` returns its result."""

    def register(handler: Handler) -> Handler:
        definition = types.Tool(name=name, description=description, inputSchema=schema or NO_ARGUMENTS)
        TOOLS[name] = (definition, handler)
        return handler

    return register


def string_properties(*names: str) -> dict[str, Any]:
    """An input schema of required string arguments."""
    return {"type": "object", "properties": {name: {"type": "string"} for name in names}, "required": list(names)}


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return [definition for definition, _ in TOOLS.values()]


async def call_tool(request: types.CallToolRequest) -> types.ServerResult:
    """`tools/call`, registered by hand rather than with `@server.call_tool()`:
    the SDK's decorator turns every exception into an `isError` result, and
    `protocol_error_job` and `test_missing_capability` must end in a JSON-RPC
    error (an `McpError` raised here reaches the wire as one)."""
    name = request.params.name
    found = TOOLS.get(name)
    if found is None:
        raise McpError(types.ErrorData(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}"))
    _, handler = found
    try:
        result = await handler(request.params.arguments or {})
    except McpError:
        raise
    except NotDeclared as error:
        result = text_result(f"{name}: {error}", is_error=True)
    except Exception as error:  # a tool's failure is its result, as the SDK has it
        log.info("tool %s failed: %s", name, error)
        result = text_result(str(error), is_error=True)
    return types.ServerResult(result)


server.request_handlers[types.CallToolRequest] = call_tool
