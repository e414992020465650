"""Building an OpenAI Chat Completions request body from a ``ModelRequest``."""

from __future__ import annotations

from typing import Any

from ..messages import AssistantMessage, Document, Image, Part, Text, ToolCall, ToolResultMessage, UserMessage
from .history import arguments_json, projected_history
from .media import data_uri, document_text, file_name, has_media
from .output import OutputSpec
from .request import ModelRequest, ToolSpec
from .strict import openai_strict


def chat_tool(tool: ToolSpec, *, strict: bool = False) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }
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


def _content_part(part: Part) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Image):
        return {"type": "image_url", "image_url": {"url": data_uri(part)}}
    if isinstance(part, Document):
        if part.media_type == "text/plain":
            return {"type": "text", "text": document_text(part)}
        return {"type": "file", "file": {"filename": file_name(part), "file_data": data_uri(part)}}
    return None


def _content(parts: list[Part]) -> list[dict[str, Any]]:
    return [block for part in parts if (block := _content_part(part)) is not None]


def _user(message: UserMessage) -> dict[str, Any]:
    # Text alone goes as a string, as every compatible server takes it.
    if not has_media(message.content):
        return {"role": "user", "content": message.text}
    return {"role": "user", "content": _content(message.content)}


def _tool_results(results: list[ToolResultMessage]) -> list[dict[str, Any]]:
    """The tool messages answering one assistant message. A tool message
    carries text only, so the images and documents of the results follow
    in one user message after the last of them (a user message between
    them would break the run of answers the API requires)."""
    messages: list[dict[str, Any]] = []
    attached: list[dict[str, Any]] = []
    for result in results:
        text = result.text
        if has_media(result.content):
            text += ("\n" if text else "") + "[its images and documents follow in the next user message]"
            attached.append(
                {"type": "text", "text": f"From the result of {result.tool_name} ({result.tool_call_id}):"}
            )
            attached += _content([p for p in result.content if not isinstance(p, Text)])
        messages.append({"role": "tool", "tool_call_id": result.tool_call_id, "content": text})
    if attached:
        messages.append({"role": "user", "content": attached})
    return messages


def chat_messages(request: ModelRequest, *, system_role: str = "system") -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.system_prompt:
        messages.append({"role": system_role, "content": request.system_prompt})
    results: list[ToolResultMessage] = []
    for message in projected_history(request):
        if isinstance(message, ToolResultMessage):
            results.append(message)
            continue
        if results:
            messages += _tool_results(results)
            results = []
        if isinstance(message, UserMessage):
            messages.append(_user(message))
        elif (assistant := _assistant(message)) is not None:
            messages.append(assistant)
    return messages + _tool_results(results)


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
    prompt_cache_key: str | None = None,
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
    if prompt_cache_key is not None:
        body["prompt_cache_key"] = prompt_cache_key
    return body
