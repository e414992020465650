"""The three message kinds of a conversation."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from .parts import Part, Text, ToolCall
from .usage import Usage

StopReason = Literal["stop", "tool_use", "max_tokens", "context_overflow", "error", "aborted"]

#: Stop reasons after which an assistant message is incomplete: its tool calls
#: may be cut off and are never executed.
TRUNCATED_STOP_REASONS: frozenset[str] = frozenset(
    {"max_tokens", "context_overflow", "error", "aborted"}
)


@attrs.frozen
class UserMessage:
    content: str | list[Part]

    role: ClassVar[str] = "user"

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, Text))


def _default_stop_reason(self: AssistantMessage) -> str:
    return "tool_use" if any(isinstance(p, ToolCall) for p in self.content) else "stop"


@attrs.frozen
class AssistantMessage:
    content: list[Part] = attrs.field(factory=list)
    stop_reason: StopReason = attrs.field(
        default=attrs.Factory(_default_stop_reason, takes_self=True)
    )
    usage: Usage = attrs.field(factory=Usage)
    model: str = ""
    provider: str = ""
    error: str | None = None

    role: ClassVar[str] = "assistant"

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [p for p in self.content if isinstance(p, ToolCall)]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, Text))

    @property
    def truncated(self) -> bool:
        return self.stop_reason in TRUNCATED_STOP_REASONS


@attrs.frozen
class ToolResultMessage:
    tool_call_id: str
    tool_name: str
    content: list[Part] = attrs.field(factory=list)
    is_error: bool = False
    #: Data for a UI or a log, never sent to a model. Must be JSON-serializable.
    details: Any = None
    #: What kind of error an ``is_error`` result is, for code to act on
    #: (``TOOL_NOT_FOUND``, ``TOOL_INPUT_INVALID``, ``TOOL_FAILED``,
    #: ``PERMISSION_DENIED``, ``TOOL_NOT_STARTED`` … see
    #: ``agentrio.messages.protocol``); never sent to a model.
    error_code: str | None = None

    role: ClassVar[str] = "tool_result"

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, Text))


Message = UserMessage | AssistantMessage | ToolResultMessage
