"""The three message kinds of a conversation."""

from __future__ import annotations

import typing
from typing import Any, ClassVar, Literal

import attrs

from .checks import is_bool, is_optional_str, is_str, json_data, parts_of
from .media import Document, Image
from .parts import Part, Text, Thinking, ToolCall
from .usage import Usage

StopReason = Literal["stop", "tool_use", "max_tokens", "context_overflow", "error", "aborted"]

#: Stop reasons after which an assistant message is incomplete: its tool calls
#: may be cut off and are never executed.
TRUNCATED_STOP_REASONS: frozenset[str] = frozenset({"max_tokens", "context_overflow", "error", "aborted"})
_STOP_REASONS = typing.get_args(StopReason)

_is_content = parts_of(Text, Thinking, ToolCall)
#: A tool result may hold images and documents as well.
_is_result_content = parts_of(Text, Thinking, ToolCall, Image, Document)
#: The check of a field that takes a str or a list of parts
#: (``UserMessage.content``; tools use it for ``ToolResult.content``).
is_str_or_parts = parts_of(Text, Thinking, ToolCall, Image, Document, string=True)


def _is_stop_reason(instance: Any, attribute: Any, value: Any) -> None:
    if value not in _STOP_REASONS or type(value) is not str:
        raise TypeError(f"AssistantMessage.stop_reason: expected one of {list(_STOP_REASONS)}, got {value!r}")


def _is_usage(instance: Any, attribute: Any, value: Any) -> None:
    if type(value) is not Usage:
        raise TypeError(
            f"AssistantMessage.usage: expected a Usage, got a value of type {type(value).__name__}"
        )


@attrs.frozen
class UserMessage:
    """What a person (or a host) says. ``content`` is checked when the
    message is made: a ``TypeError`` names what is wrong."""

    content: str | list[Part] = attrs.field(validator=is_str_or_parts)

    role: ClassVar[str] = "user"

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, Text))


def _default_stop_reason(self: AssistantMessage) -> str:
    # Runs before the validators: content may not be a list yet.
    content = self.content if type(self.content) is list else ()
    return "tool_use" if any(type(p) is ToolCall for p in content) else "stop"


@attrs.frozen
class AssistantMessage:
    content: list[Part] = attrs.field(factory=list, validator=_is_content)
    stop_reason: StopReason = attrs.field(
        default=attrs.Factory(_default_stop_reason, takes_self=True), validator=_is_stop_reason
    )
    usage: Usage = attrs.field(factory=Usage, validator=_is_usage)
    model: str = attrs.field(default="", validator=is_str)
    provider: str = attrs.field(default="", validator=is_str)
    error: str | None = attrs.field(default=None, validator=is_optional_str)

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
    tool_call_id: str = attrs.field(validator=is_str)
    tool_name: str = attrs.field(validator=is_str)
    content: list[Part] = attrs.field(factory=list, validator=_is_result_content)
    is_error: bool = attrs.field(default=False, validator=is_bool)
    #: Data for a UI or a log, never sent to a model. Kept as plain JSON data:
    #: anything else becomes what JSON makes of it, or its ``repr``.
    details: Any = attrs.field(default=None, converter=json_data)
    #: What kind of error an ``is_error`` result is, for code to act on
    #: (``TOOL_NOT_FOUND``, ``TOOL_INPUT_INVALID``, ``TOOL_FAILED``,
    #: ``PERMISSION_DENIED``, ``TOOL_NOT_STARTED`` … see
    #: ``agentrio.messages.protocol``); never sent to a model.
    error_code: str | None = attrs.field(default=None, validator=is_optional_str)

    role: ClassVar[str] = "tool_result"

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, Text))


Message = UserMessage | AssistantMessage | ToolResultMessage
