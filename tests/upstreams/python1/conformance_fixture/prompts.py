"""The fixture's prompts (`prompts/list`, `prompts/get`): the fixed messages
of the suite's `prompts-*` scenarios, and `test_input_required_result_prompt`,
which asks the client a context (-32021 when it declared no elicitation)."""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp.shared.exceptions import McpError

from .asking import content_value, declared, elicit, form, missing_capability
from .base import embedded, server, test_image


def prompt_argument(name: str, description: str) -> types.PromptArgument:
    return types.PromptArgument(name=name, description=description, required=True)


PROMPTS = [
    types.Prompt(name="test_simple_prompt", title="Simple Test Prompt", description="A simple prompt without arguments"),
    types.Prompt(
        name="test_prompt_with_arguments",
        title="Prompt With Arguments",
        description="A prompt with required arguments",
        arguments=[prompt_argument("arg1", "First test argument"), prompt_argument("arg2", "Second test argument")],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        title="Prompt With Embedded Resource",
        description="A prompt that includes an embedded resource",
        arguments=[prompt_argument("resourceUri", "URI of the resource to embed")],
    ),
    types.Prompt(
        name="test_prompt_with_image", title="Prompt With Image", description="A prompt that includes image content"
    ),
    types.Prompt(
        name="test_input_required_result_prompt",
        description="Asks a context (elicitation/create), then a prompt naming it",
    ),
]


@server.list_prompts()
async def list_prompts() -> list[types.Prompt]:
    return PROMPTS


def user(content: Any) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=content)


def user_text(text: str) -> types.PromptMessage:
    return user(types.TextContent(type="text", text=text))


@server.get_prompt()
async def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
    arguments = arguments or {}
    if name == "test_simple_prompt":
        return types.GetPromptResult(messages=[user_text("This is a simple prompt for testing.")])
    if name == "test_prompt_with_arguments":
        arg1, arg2 = arguments.get("arg1", ""), arguments.get("arg2", "")
        return types.GetPromptResult(messages=[user_text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")])
    if name == "test_prompt_with_embedded_resource":
        uri = arguments.get("resourceUri", "test://example-resource")
        return types.GetPromptResult(
            messages=[
                user(embedded(uri, "text/plain", "Embedded resource content for testing.")),
                user_text("Please process the embedded resource above."),
            ]
        )
    if name == "test_prompt_with_image":
        return types.GetPromptResult(messages=[user(test_image()), user_text("Please analyze the image above.")])
    if name == "test_input_required_result_prompt":
        if not declared("elicitation"):
            message = "this prompt asks for input: the client did not declare elicitation"
            raise missing_capability("elicitation", message)
        answer = await elicit("What context should the prompt use?", form(context="string"))
        return types.GetPromptResult(messages=[user_text(f"Prompt with context: {content_value(answer, 'context')}")])
    raise McpError(types.ErrorData(code=types.INVALID_PARAMS, message=f"Unknown prompt: {name}"))
