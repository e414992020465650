"""What a real provider rejects, checked offline.

``ScriptedModel(strict=True)`` runs these checks on every request, so a test
fails the same way a provider would fail in production: with a 400.
"""

from __future__ import annotations

from ..messages import AssistantMessage, Part, Text, ToolResultMessage, UserMessage
from .output import OUTPUT_TOOL
from .request import ModelRequest


def _has_blank_text(content: str | list[Part]) -> bool:
    return any(isinstance(p, Text) and not p.text for p in content)


def request_problems(request: ModelRequest) -> list[str]:
    """Every reason a provider would reject ``request``; empty when valid."""
    problems: list[str] = []
    if not request.messages:
        problems.append("messages: at least one message is required")
    names = [t.name for t in request.tools]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"tools: the name {name!r} is used more than once")
    if request.output is not None and OUTPUT_TOOL in names:
        problems.append(f"tools: the name {OUTPUT_TOOL!r} is reserved for the answer of a typed request")

    seen_calls: set[str] = set()
    # Calls of the latest assistant message still waiting for their result.
    waiting: dict[str, str] = {}
    for i, message in enumerate(request.messages):
        where = f"messages[{i}]"
        if isinstance(message, ToolResultMessage):
            if waiting.pop(message.tool_call_id, None) is None:
                problems.append(
                    f"{where}: tool result for {message.tool_call_id!r} does not directly "
                    "follow the assistant message that called it"
                )
            continue
        for call_id in waiting:
            problems.append(f"{where}: tool call {call_id!r} has no result before this message")
        waiting = {}
        if isinstance(message, UserMessage):
            if not message.content or (
                not isinstance(message.content, str) and _has_blank_text(message.content)
            ):
                problems.append(f"{where}: user message content must not be empty")
            continue
        assert isinstance(message, AssistantMessage)
        if not message.content:
            problems.append(f"{where}: assistant message content must not be empty")
        elif _has_blank_text(message.content):
            problems.append(f"{where}: text content blocks must not be empty")
        for call in message.tool_calls:
            if call.id in seen_calls:
                problems.append(f"{where}: tool call id {call.id!r} is not unique")
            seen_calls.add(call.id)
            waiting[call.id] = call.name
    for call_id in waiting:
        problems.append(f"tool call {call_id!r} has no result at the end of the request")
    return problems
