"""Messages in the JSON shape of the GenAI conventions' opt-in content
attributes (``gen_ai.input.messages``, ``gen_ai.output.messages``).

Duck-typed on ``role`` and each part's ``type``, so tracing needs nothing
from the message layer.
"""

from __future__ import annotations

import json
from typing import Any

ROLES = {"tool_result": "tool"}


def _part(part: Any) -> dict[str, Any]:
    kind = getattr(part, "type", "")
    if kind == "text":
        return {"type": "text", "content": part.text}
    if kind == "thinking":
        return {"type": "reasoning", "content": part.text}
    if kind == "tool_call":
        arguments = part.arguments if part.raw_arguments is None else part.raw_arguments
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": arguments}
    return {"type": kind or type(part).__name__}


def message(message: Any) -> dict[str, Any]:
    content = message.content
    parts = (
        [{"type": "text", "content": content}] if isinstance(content, str) else [_part(p) for p in content]
    )
    if message.role == "tool_result":
        parts = [{"type": "tool_call_response", "id": message.tool_call_id, "response": message.text}]
    shaped: dict[str, Any] = {"role": ROLES.get(message.role, message.role), "parts": parts}
    if message.role == "assistant":
        shaped["finish_reason"] = message.stop_reason
    return shaped


def dumps(value: Any) -> str:
    """Compact JSON; what JSON cannot hold is written as its ``repr``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)


def messages(messages: list[Any]) -> str:
    return dumps([message(m) for m in messages])


def system_instructions(prompt: str) -> str:
    return dumps([{"type": "text", "content": prompt}])


def tool_output(content: Any) -> str:
    """A tool result's content (a string or a list of parts) as text."""
    if isinstance(content, str):
        return content
    return "".join(getattr(p, "text", "") for p in content)
