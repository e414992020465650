"""Messages as the package writes them: a fast encoder, and a fast,
strict decoder.

``converter`` structures any JSON the message classes accept, at about
10 µs a message: restoring a long session is mostly that. This decoder
lets msgspec parse and type-check the JSON in one pass against a mirror of
each class, then fills the real objects' slots directly.

Filling slots skips the classes' validators, so what they check is checked
here, once: msgspec checks every exact type, the parts' tags and the stop
reason (the mirrors' annotations); ``json_problem`` checks tool-call
arguments and result details (depth, non-finite floats), as the
validator and the converter do, and where it finds a problem the build
raises and the caller goes the converter's way, which decides as it
always has. ``tests/journal/test_codec.py`` holds each class's validators
and converters to the ones this module stands in for, so a check added to
a class cannot be skipped here unnoticed.

Encoding takes the same mirrors the other way: ``shape(message)``, which
msgspec encodes as the converter would unstructure it, in half the time.

The mirrors accept only the exact shape ``converter.unstructure`` writes:
every field present, no field unknown, values of their exact JSON types.
Anything else (a field added since, an older record without one, an
integer written as ``1.0``) is ``msgspec.ValidationError``, and the caller
falls back to ``converter``, which decides as it always has. So this path
never accepts what ``converter`` would refuse, and builds the same values
from what it accepts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import attrs
import msgspec

from .checks import json_problem
from .media import Document, Image
from .messages import AssistantMessage, Message, StopReason, ToolResultMessage, UserMessage
from .parts import Part, Text, Thinking, ToolCall
from .usage import Usage, counted

_new = object.__new__


def _slots(cls: type) -> list[Callable[[Any, Any], None]]:
    """The setters of the slots of the frozen class ``cls``, in field order."""
    return [getattr(cls, field.name).__set__ for field in attrs.fields(cls)]


def _json_data(value: Any) -> Any:
    """``value``, refused (``ValueError``) where the classes' JSON check
    would refuse or change it."""
    if value is not None and json_problem(value) is not None:
        raise ValueError("not plain JSON data")
    return value


class Mirror(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A mirror of a message class, or of a record that holds messages or
    JSON scalars. The collector does not track it: it holds JSON values, the
    values of what it mirrors and other mirrors, none of which can refer back
    to it, so it is in no cycle; restoring a session builds one or more a
    message."""


(_SET_TEXT,) = _slots(Text)
_SET_THINKING = _slots(Thinking)
_SET_CALL = _slots(ToolCall)
(_SET_USER,) = _slots(UserMessage)
_SET_ASSISTANT = _slots(AssistantMessage)
_SET_RESULT = _slots(ToolResultMessage)


class _Text(Mirror, tag_field="type", tag=Text.type):
    text: str

    def build(self) -> Text:
        part = _new(Text)
        _SET_TEXT(part, self.text)
        return part

    @classmethod
    def of(cls, part: Text) -> _Text:
        return cls(part.text)


class _Thinking(Mirror, tag_field="type", tag=Thinking.type):
    text: str
    signature: str | None
    redacted: bool
    id: str | None

    def build(self) -> Thinking:
        part = _new(Thinking)
        for set_slot, value in zip(_SET_THINKING, (self.text, self.signature, self.redacted, self.id)):
            set_slot(part, value)
        return part

    @classmethod
    def of(cls, part: Thinking) -> _Thinking:
        return cls(part.text, part.signature, part.redacted, part.id)


class _ToolCall(Mirror, tag_field="type", tag=ToolCall.type):
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str | None

    def build(self) -> ToolCall:
        part = _new(ToolCall)
        id_, name, arguments, raw_arguments = _SET_CALL
        id_(part, self.id)
        name(part, self.name)
        arguments(part, _json_data(self.arguments))
        raw_arguments(part, self.raw_arguments)
        return part

    @classmethod
    def of(cls, part: ToolCall) -> _ToolCall:
        return cls(part.id, part.name, part.arguments, part.raw_arguments)


class _Image(Mirror, tag_field="type", tag=Image.type):
    # msgspec reads and writes bytes as base64 text, as the converter does.
    data: bytes
    media_type: str

    def build(self) -> Image:
        # Made through the class: its checks (type, size, magic bytes) are
        # worth their cost on a part this large.
        return Image(self.data, self.media_type)

    @classmethod
    def of(cls, part: Image) -> _Image:
        return cls(part.data, part.media_type)


class _Document(Mirror, tag_field="type", tag=Document.type):
    data: bytes
    media_type: str
    name: str | None

    def build(self) -> Document:
        return Document(self.data, self.media_type, self.name)

    @classmethod
    def of(cls, part: Document) -> _Document:
        return cls(part.data, part.media_type, part.name)


_AssistantPart = _Text | _Thinking | _ToolCall
_Part = _AssistantPart | _Image | _Document


def _parts(parts: list[Part]) -> list[_Part]:
    return [_SHAPE_OF[type(part)](part) for part in parts]


class _Usage(Mirror):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float | None

    def build(self) -> Usage:
        cost = self.cost
        if cost is not None and not (math.isfinite(cost) and cost >= 0):
            raise ValueError("not a cost")
        return counted(
            self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens, cost
        )

    @classmethod
    def of(cls, usage: Usage) -> _Usage:
        return cls(
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.cost,
        )


class _UserMessage(Mirror, tag_field="role", tag=UserMessage.role):
    content: str | list[_Part]

    def build(self) -> UserMessage:
        content = self.content
        message = _new(UserMessage)
        _SET_USER(message, content if isinstance(content, str) else [part.build() for part in content])
        return message

    @classmethod
    def of(cls, message: UserMessage) -> _UserMessage:
        content = message.content
        return cls(content if isinstance(content, str) else _parts(content))


class _AssistantMessage(Mirror, tag_field="role", tag=AssistantMessage.role):
    content: list[_AssistantPart]
    stop_reason: StopReason
    usage: _Usage
    model: str
    provider: str
    error: str | None

    def build(self) -> AssistantMessage:
        message = _new(AssistantMessage)
        content, stop_reason, usage, model, provider, error = _SET_ASSISTANT
        content(message, [part.build() for part in self.content])
        stop_reason(message, self.stop_reason)
        usage(message, self.usage.build())
        model(message, self.model)
        provider(message, self.provider)
        error(message, self.error)
        return message

    @classmethod
    def of(cls, message: AssistantMessage) -> _AssistantMessage:
        return cls(
            cast("list[_AssistantPart]", _parts(message.content)),  # (AssistantMessage checks which)
            message.stop_reason,
            _Usage.of(message.usage),
            message.model,
            message.provider,
            message.error,
        )


class _ToolResultMessage(Mirror, tag_field="role", tag=ToolResultMessage.role):
    tool_call_id: str
    tool_name: str
    content: list[_Part]
    is_error: bool
    details: Any
    error_code: str | None

    def build(self) -> ToolResultMessage:
        message = _new(ToolResultMessage)
        tool_call_id, tool_name, content, is_error, details, error_code = _SET_RESULT
        tool_call_id(message, self.tool_call_id)
        tool_name(message, self.tool_name)
        content(message, [part.build() for part in self.content])
        is_error(message, self.is_error)
        details(message, _json_data(self.details))
        error_code(message, self.error_code)
        return message

    @classmethod
    def of(cls, message: ToolResultMessage) -> _ToolResultMessage:
        return cls(
            message.tool_call_id,
            message.tool_name,
            _parts(message.content),
            message.is_error,
            message.details,
            message.error_code,
        )


#: The mirror of ``Message``, for a struct that holds one (``build()``
#: makes the message).
MessageShape = _UserMessage | _AssistantMessage | _ToolResultMessage

#: Each message and part class beside its mirror.
MIRRORS: dict[type, type[msgspec.Struct]] = {
    Text: _Text,
    Thinking: _Thinking,
    ToolCall: _ToolCall,
    Image: _Image,
    Document: _Document,
    Usage: _Usage,
    UserMessage: _UserMessage,
    AssistantMessage: _AssistantMessage,
    ToolResultMessage: _ToolResultMessage,
}
_SHAPE_OF: dict[type, Callable[[Any], Any]] = {cls: cast(Any, mirror).of for cls, mirror in MIRRORS.items()}


def shape(message: Message) -> MessageShape:
    """``message``'s mirror, which msgspec encodes as the converter
    unstructures it."""
    shaped: MessageShape = _SHAPE_OF[type(message)](message)
    return shaped
