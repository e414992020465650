"""Building an Anthropic Messages request body from a ``ModelRequest``."""

from __future__ import annotations

import re
from typing import Any

from ..messages import Document, Image, Part, Text, Thinking, ToolCall, ToolResultMessage, UserMessage
from .history import projected_history, replayable_parts
from .media import base64_text, has_media
from .output import OUTPUT_TOOL, OutputSpec
from .request import ModelRequest, ToolSpec

_INVALID_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def tool_use_id(call_id: str) -> str:
    """Anthropic accepts only ``[a-zA-Z0-9_-]`` in tool-use ids; calls made
    by other providers (``functions.get:0``) are mapped onto that, the same
    way for the call and for its result."""
    return _INVALID_ID_CHARS.sub("_", call_id)


def anthropic_tool(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def _assistant_block(part: Part) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ToolCall):
        return {"type": "tool_use", "id": tool_use_id(part.id), "name": part.name, "input": part.arguments}
    if not isinstance(part, Thinking) or not part.signature:
        return None  # unsigned thinking is rejected (and an assistant message holds no media)
    if part.redacted:
        return {"type": "redacted_thinking", "data": part.signature}
    return {"type": "thinking", "thinking": part.text, "signature": part.signature}


def _content_block(part: Part) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, Image):
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": part.media_type, "data": base64_text(part)},
        }
    if isinstance(part, Document):
        if part.media_type == "text/plain":
            source = {"type": "text", "media_type": "text/plain", "data": part.text}
        else:
            source = {"type": "base64", "media_type": part.media_type, "data": base64_text(part)}
        block: dict[str, Any] = {"type": "document", "source": source}
        if part.name:
            block["title"] = part.name
        return block
    return None


def _content_blocks(parts: list[Part]) -> list[dict[str, Any]]:
    return [block for part in parts if (block := _content_block(part)) is not None]


def _user_blocks(message: UserMessage) -> list[dict[str, Any]]:
    if not has_media(message.content):
        return [{"type": "text", "text": message.text}]
    return _content_blocks(message.content)


def _tool_result_block(message: ToolResultMessage) -> dict[str, Any]:
    # Images and documents travel inside the tool_result, as blocks.
    content = _content_blocks(message.content) if has_media(message.content) else message.text
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": tool_use_id(message.tool_call_id),
        "content": content,
    }
    if message.is_error:
        block["is_error"] = True
    return block


def anthropic_messages(request: ModelRequest, *, provider: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    # Tool results travel in a user message, before anything else the user says.
    user_blocks: list[dict[str, Any]] = []
    for message in projected_history(request):
        if isinstance(message, ToolResultMessage):
            user_blocks.append(_tool_result_block(message))
        elif isinstance(message, UserMessage):
            user_blocks += _user_blocks(message)
        else:
            if user_blocks:
                messages.append({"role": "user", "content": user_blocks})
                user_blocks = []
            blocks = [b for p in replayable_parts(message, provider) if (b := _assistant_block(p))]
            if blocks:
                messages.append({"role": "assistant", "content": blocks})
    if user_blocks:
        messages.append({"role": "user", "content": user_blocks})
    return messages


#: What Anthropic refuses at the top level of a tool's ``input_schema``.
_TOP_LEVEL_REFUSED = ("anyOf", "oneOf", "allOf")


def output_problem(output: OutputSpec) -> str | None:
    """Why Anthropic would refuse the answer tool of ``output``: its
    ``input_schema`` may not combine schemas at the top level."""
    if combined := [key for key in _TOP_LEVEL_REFUSED if key in output.schema]:
        return (
            f"Anthropic refuses {combined[0]} at the top level of a tool's input_schema, "
            "and the answer is asked for as a tool call; move it under a property"
        )
    return None


def _ask_for_output(body: dict[str, Any], output: OutputSpec, *, forced: bool) -> None:
    """Anthropic has no native structured output here: the answer is the
    input of a tool, which ``AnswerToolMapper`` turns back into text. The
    model must call some tool at every step, unless extended thinking is on
    (it forbids forcing a tool)."""
    description = "Give your final answer by calling this tool: its input is the answer."
    if output.description:
        description += " " + output.description
    body.setdefault("tools", []).append(
        {"name": OUTPUT_TOOL, "description": description, "input_schema": output.schema}
    )
    body["tool_choice"] = {"type": "any" if forced else "auto"}


#: Marks the end of a prefix Anthropic may cache (for five minutes).
CACHE_BREAKPOINT = {"type": "ephemeral"}
_UNCACHEABLE = {"thinking", "redacted_thinking"}


def _mark_cache_breakpoints(body: dict[str, Any]) -> None:
    """Let the next request of the same conversation read the tools, the
    system prompt and the whole history so far from the prompt cache: an
    agent resends all of them on every step. Three of the four breakpoints
    Anthropic allows; prefixes below the model's minimum are simply not
    cached."""
    if body.get("tools"):
        body["tools"][-1]["cache_control"] = CACHE_BREAKPOINT
    if isinstance(body.get("system"), str):
        body["system"] = [{"type": "text", "text": body["system"], "cache_control": CACHE_BREAKPOINT}]
    if body["messages"]:
        blocks = [b for b in body["messages"][-1]["content"] if b["type"] not in _UNCACHEABLE]
        if blocks:
            blocks[-1]["cache_control"] = CACHE_BREAKPOINT


def anthropic_request_body(
    model: str,
    request: ModelRequest,
    *,
    provider: str,
    max_tokens: int,
    temperature: float | None = None,
    thinking_budget: int | None = None,
    prompt_cache: bool = True,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": anthropic_messages(request, provider=provider),
        "stream": True,
    }
    if request.system_prompt:
        body["system"] = request.system_prompt
    if request.tools:
        body["tools"] = [anthropic_tool(t) for t in request.tools]
    if request.output is not None:
        _ask_for_output(body, request.output, forced=thinking_budget is None)
    if temperature is not None:
        body["temperature"] = temperature
    if thinking_budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
    if prompt_cache:
        _mark_cache_breakpoints(body)
    return body
