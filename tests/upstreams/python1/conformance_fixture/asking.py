"""Asking the client, as a server of 2025-11-25 does: `elicitation/create`,
`sampling/createMessage` and `roots/list` sent as real requests in the
call's session, on the call's stream, only when the session's client
declared the capability (`need`, `declared`; `ask` does both for one
elicitation); reading the answers; and the -32021 error of 2026-07-28 for
a request that cannot go without one."""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types
from mcp.shared.exceptions import McpError
from mcp.shared.message import ServerMessageMetadata

from .base import context

#: The error code of 2026-07-28's MissingRequiredClientCapabilityError.
MISSING_CAPABILITY = -32021


class NotDeclared(Exception):
    """The session's client did not declare a capability a tool needs."""

    def __init__(self, capability: str) -> None:
        super().__init__(f"this needs the client capability `{capability}`, which the client did not declare")
        self.capability = capability


CAPABILITIES = {
    "elicitation": types.ClientCapabilities(elicitation=types.ElicitationCapability()),
    "sampling": types.ClientCapabilities(sampling=types.SamplingCapability()),
    "roots": types.ClientCapabilities(roots=types.RootsCapability()),
}


def declared(capability: str) -> bool:
    return context().session.check_client_capability(CAPABILITIES[capability])


def need(*capabilities: str) -> None:
    for capability in capabilities:
        if not declared(capability):
            raise NotDeclared(capability)


def missing_capability(capability: str, message: str) -> McpError:
    """The JSON-RPC error -32021 naming the capability the client lacks."""
    return McpError(
        types.ErrorData(
            code=MISSING_CAPABILITY,
            message=message,
            data={"requiredCapabilities": {capability: {}}},
        )
    )


def answer_json(result: Any) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def elicit(message: str, schema: dict[str, Any]) -> types.ElicitResult:
    """An `elicitation/create` on the call's stream."""
    ctx = context()
    return await ctx.session.elicit(message=message, requestedSchema=schema, related_request_id=ctx.request_id)


async def sample(prompt: str, max_tokens: int) -> types.CreateMessageResult:
    """A `sampling/createMessage` on the call's stream."""
    ctx = context()
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return await ctx.session.create_message(
        messages=[message], max_tokens=max_tokens, related_request_id=ctx.request_id
    )


async def list_roots() -> types.ListRootsResult:
    """A `roots/list` on the call's stream (the SDK's `list_roots()` names
    no request, which would send it on the session's GET stream)."""
    ctx = context()
    return await ctx.session.send_request(
        types.ServerRequest(types.ListRootsRequest()),
        types.ListRootsResult,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )


def content_value(result: types.ElicitResult, field: str, default: Any = "unknown") -> Any:
    """The answer's `content[field]`, or `default`."""
    value = (result.content or {}).get(field)
    return default if value is None else value


def sampled_text(result: types.CreateMessageResult) -> str:
    content = result.content
    return content.text if isinstance(content, types.TextContent) else json.dumps(answer_json(result))


def form(**fields: str) -> dict[str, Any]:
    """A form with required fields of the given JSON types."""
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in fields.items()},
        "required": list(fields),
    }


async def ask(message: str, **fields: str) -> types.ElicitResult:
    """One question: `NotDeclared` unless the client declared elicitation,
    else an `elicitation/create` of `message` with a form of `fields`."""
    need("elicitation")
    return await elicit(message, form(**fields))
