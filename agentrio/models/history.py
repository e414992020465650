"""Helpers shared by the request builders (history -> provider JSON)."""

from __future__ import annotations

import json

from ..messages import AssistantMessage, Message, Part, Thinking, ToolCall, project_tool_protocol
from .request import ModelRequest


def projected_history(request: ModelRequest) -> list[Message]:
    """The request's messages as every provider accepts them."""
    return project_tool_protocol(request.messages)


def arguments_json(call: ToolCall) -> str:
    """A call's arguments as the model wrote them, when they were not an
    object; else compact JSON, the way models write it."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))


def replayable_parts(message: AssistantMessage, provider: str) -> list[Part]:
    """The parts of ``message`` to send back to ``provider``: thinking is
    proof of a provider's own reasoning and only that provider accepts it."""
    if message.provider == provider:
        return list(message.content)
    return [p for p in message.content if not isinstance(p, Thinking)]
