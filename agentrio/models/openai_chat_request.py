"""Building an OpenAI Chat Completions request body from a ``ModelRequest``."""

from __future__ import annotations

from typing import Any

from ..messages import AssistantMessage, Text, ToolCall, ToolResultMessage, UserMessage
from .history import arguments_json, projected_history
from .output import OutputSpec
from .request import ModelRequest, ToolSpec
from .strict import openai_strict


def chat_tool(tool: ToolSpec, *, strict: bool = False) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    if strict and (schema := openai_strict(tool.parameters)) is not None:
        function.update(parameters=schema, strict=True)
    return {"type": "function", "function": function}


def json_schema_format(output: OutputSpec) -> dict[str, Any]:
    """The ``json_schema`` format both OpenAI APIs take for typed output."""
    strict = output.strict_schema is not None
    fmt: dict[str, Any] = {"name": output.name, "schema": output.strict_schema if strict else output.schema}
    if output.description:
        fmt["description"] = output.description
    fmt["strict"] = strict
    return fmt


def _assistant(message: AssistantMessage) -> dict[str, Any] | None:
    # Chat Completions has no way to replay reasoning: thinking is dropped.
    text = "".join(p.text for p in message.content if isinstance(p, Text))
    calls = [
        {
            "id": p.id,
            "type": "function",
            "function": {"name": p.name, "arguments": arguments_json(p)},
        }
        for p in message.content
        if isinstance(p, ToolCall)
    ]
    if not text and not calls:
        return None
    out: dict[str, Any] = {"role": "assistant"}
    if text:
        out["content"] = text
    if calls:
        out["tool_calls"] = calls
    return out


def chat_messages(request: ModelRequest, *, system_role: str = "system") -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.system_prompt:
        messages.append({"role": system_role, "content": request.system_prompt})
    for message in projected_history(request):
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": message.text})
        elif isinstance(message, ToolResultMessage):
            messages.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text})
        elif (assistant := _assistant(message)) is not None:
            messages.append(assistant)
    return messages


def chat_request_body(
    model: str,
    request: ModelRequest,
    *,
    max_tokens: int | None = None,
    max_tokens_field: str = "max_completion_tokens",
    temperature: float | None = None,
    reasoning_effort: str | None = None,
    system_role: str = "system",
    strict_tools: bool = True,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(request, system_role=system_role),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [chat_tool(t, strict=strict_tools) for t in request.tools]
    if request.output is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": json_schema_format(request.output)}
    if max_tokens is not None:
        body[max_tokens_field] = max_tokens
    if temperature is not None:
        body["temperature"] = temperature
    if reasoning_effort is not None:
        body["reasoning_effort"] = reasoning_effort
    return body
