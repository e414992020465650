"""Building an OpenAI Responses API request body from a ``ModelRequest``.

Requests are stateless (``store: false`` by default): the whole history is
sent every time, and reasoning items travel back with their encrypted
content, which is what lets the model continue its reasoning across tool
calls. Messages and function calls are sent without item ids, which only
refer to items the server stored.
"""

from __future__ import annotations

from typing import Any

from ..messages import (
    AssistantMessage,
    Document,
    Image,
    Part,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .history import arguments_json, projected_history, replayable_parts
from .media import data_uri, document_text, file_name, has_media
from .openai_chat_request import json_schema_format
from .request import ModelRequest, ToolSpec
from .strict import openai_strict


def responses_tool(tool: ToolSpec, *, strict: bool = False) -> dict[str, Any]:
    # The Responses API makes function tools strict unless told otherwise,
    # and strict mode rejects most ordinary JSON Schemas: a tool is strict
    # only when its schema has a lossless strict variant.
    schema = openai_strict(tool.parameters) if strict else None
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters if schema is None else schema,
        "strict": schema is not None,
    }


def _reasoning_item(part: Part) -> dict[str, Any] | None:
    if not isinstance(part, Thinking) or not part.id or not part.signature:
        return None  # nothing the API could resume from
    summary = [{"type": "summary_text", "text": part.text}] if part.text else []
    return {"type": "reasoning", "id": part.id, "summary": summary, "encrypted_content": part.signature}


def _assistant_items(message: AssistantMessage, provider: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for part in replayable_parts(message, provider):
        if isinstance(part, Text):
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": part.text}],
                }
            )
        elif isinstance(part, ToolCall):
            items.append(
                {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": arguments_json(part),
                }
            )
        elif (reasoning := _reasoning_item(part)) is not None:
            items.append(reasoning)
    return items


def _input_part(part: Part) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, Image):
        return {"type": "input_image", "image_url": data_uri(part)}
    if isinstance(part, Document):
        if part.media_type == "text/plain":
            return {"type": "input_text", "text": document_text(part)}
        return {"type": "input_file", "filename": file_name(part), "file_data": data_uri(part)}
    return None


def _input_content(content: str | list[Part], text: str) -> str | list[dict[str, Any]]:
    """Text alone as a string; with images or documents, a list of input parts."""
    if not has_media(content):
        return text
    return [item for part in content if (item := _input_part(part)) is not None]


def responses_input(request: ModelRequest, *, provider: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in projected_history(request):
        if isinstance(message, UserMessage):
            items.append({"role": "user", "content": _input_content(message.content, message.text)})
        elif isinstance(message, ToolResultMessage):
            output = _input_content(message.content, message.text)
            items.append({"type": "function_call_output", "call_id": message.tool_call_id, "output": output})
        else:
            items += _assistant_items(message, provider)
    return items


def responses_request_body(
    model: str,
    request: ModelRequest,
    *,
    provider: str,
    max_tokens: int | None = None,
    temperature: float | None = None,
    reasoning_effort: str | None = None,
    reasoning_summary: str | None = None,
    store: bool = False,
    strict_tools: bool = True,
    prompt_cache_key: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "input": responses_input(request, provider=provider),
        "stream": True,
        "store": store,
    }
    if not store:
        body["include"] = ["reasoning.encrypted_content"]
    if request.system_prompt:
        body["instructions"] = request.system_prompt
    if request.tools:
        body["tools"] = [responses_tool(t, strict=strict_tools) for t in request.tools]
    if request.output is not None:
        body["text"] = {"format": {"type": "json_schema", **json_schema_format(request.output)}}
    if max_tokens is not None:
        body["max_output_tokens"] = max_tokens
    if temperature is not None:
        body["temperature"] = temperature
    reasoning = {"effort": reasoning_effort, "summary": reasoning_summary}
    if reasoning := {k: v for k, v in reasoning.items() if v is not None}:
        body["reasoning"] = reasoning
    if prompt_cache_key is not None:
        body["prompt_cache_key"] = prompt_cache_key
    return body
