"""The fixture's resources and completions, as a 2025-11-25 server has them:
`resources/list`, `resources/templates/list`, `resources/read` (an unknown
URI gets -32602 with `data.uri`), `resources/subscribe` and `unsubscribe`,
and `completion/complete` over a fixed list of suggestions."""

from __future__ import annotations

import base64
import json
from typing import Any

import mcp.types as types
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.shared.exceptions import McpError

from .base import TEST_IMAGE_BASE64, server

STATIC_TEXT = "test://static-text"
STATIC_BINARY = "test://static-binary"
WATCHED = "test://watched-resource"
TEMPLATE_PREFIX, TEMPLATE_SUFFIX = "test://template/", "/data"

#: (uri, name, title, description, mimeType) of each listed resource.
RESOURCES = [
    (STATIC_TEXT, "static-text", "Static Text Resource", "A static text resource for testing", "text/plain"),
    (
        STATIC_BINARY,
        "static-binary",
        "Static Binary Resource",
        "A static binary resource (image) for testing",
        "image/png",
    ),
    (WATCHED, "watched-resource", "Watched Resource", "A resource clients may subscribe to", "text/plain"),
]


@server.list_resources()
async def list_resources() -> list[types.Resource]:
    return [
        types.Resource(
            uri=uri,  # type: ignore[arg-type]
            name=name,
            title=title,
            description=description,
            mimeType=mime_type,
        )
        for uri, name, title, description, mime_type in RESOURCES
    ]


@server.list_resource_templates()
async def list_resource_templates() -> list[types.ResourceTemplate]:
    return [
        types.ResourceTemplate(
            uriTemplate=f"{TEMPLATE_PREFIX}{{id}}{TEMPLATE_SUFFIX}",
            name="template",
            title="Resource Template",
            description="A resource template with parameter substitution",
            mimeType="application/json",
        )
    ]


@server.read_resource()
async def read_resource(uri: Any) -> list[ReadResourceContents]:
    text = str(uri)
    if text == STATIC_TEXT:
        return [ReadResourceContents("This is the content of the static text resource.", "text/plain")]
    if text == STATIC_BINARY:
        return [ReadResourceContents(base64.b64decode(TEST_IMAGE_BASE64), "image/png")]
    if text == WATCHED:
        return [ReadResourceContents("Watched resource content", "text/plain")]
    if text.startswith(TEMPLATE_PREFIX) and text.endswith(TEMPLATE_SUFFIX):
        id_ = text[len(TEMPLATE_PREFIX) : -len(TEMPLATE_SUFFIX)]
        if id_ and "/" not in id_:
            data = {"id": id_, "templateTest": True, "data": f"Data for ID: {id_}"}
            return [ReadResourceContents(json.dumps(data), "application/json")]
    # SEP-2164 (and 2025-11-25's advice): -32602 naming the URI.
    raise McpError(types.ErrorData(code=types.INVALID_PARAMS, message=f"Resource not found: {text}", data={"uri": text}))


subscriptions: set[str] = set()


@server.subscribe_resource()
async def subscribe_resource(uri: Any) -> None:
    subscriptions.add(str(uri))


@server.unsubscribe_resource()
async def unsubscribe_resource(uri: Any) -> None:
    subscriptions.discard(str(uri))


SUGGESTIONS = ["paris", "park", "party", "test", "testValue1", "testValue2"]


@server.completion()
async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    _: types.CompletionContext | None,
) -> types.Completion:
    values = [value for value in SUGGESTIONS if value.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), hasMore=False)
