"""Building an OpenAI Chat Completions request body from a ``ModelRequest``."""

from __future__ import annotations

from typing import Any

from ..messages import AssistantMessage, Text, ToolCall, ToolResultMessage, UserMessage
from .history import arguments_json, projected_history
from .request import ModelRequest, ToolSpec


def chat_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


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
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(request, system_role=system_role),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [chat_tool(t) for t in request.tools]
    if max_tokens is not None:
        body[max_tokens_field] = max_tokens
    if temperature is not None:
        body["temperature"] = temperature
    if reasoning_effort is not None:
        body["reasoning_effort"] = reasoning_effort
    return body
