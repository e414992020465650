"""The normalized stream every model adapter emits.

A stream is ``StreamStart``, then content blocks, then ``Done``. Each block
is opened by a ``*Start`` event, grows by ``*Delta`` events and is closed by
an ``*End`` event; blocks are numbered by ``index`` in the order they start
and may interleave. Tool-call arguments arrive as fragments of one JSON
document. A stream that fails ends with ``StreamError`` instead of
``Done`` (or the adapter raises ``ProviderError``, which means the same).

Fields are type-checked when an event is made (a ``TypeError`` naming the
field), so a server's ``"text": true`` fails in the adapter, as an invalid
response, not later in whatever folds the stream.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from ..messages import StopReason, Usage, register_tagged_union
from ..messages.checks import is_bool, is_count, is_optional_str, is_str
from .errors import ProviderError


@attrs.frozen
class StreamStart:
    model: str = attrs.field(default="", validator=is_str)
    provider: str = attrs.field(default="", validator=is_str)

    type: ClassVar[str] = "start"


@attrs.frozen
class TextStart:
    index: int = attrs.field(validator=is_count)

    type: ClassVar[str] = "text_start"


@attrs.frozen
class TextDelta:
    index: int = attrs.field(validator=is_count)
    text: str = attrs.field(validator=is_str)

    type: ClassVar[str] = "text_delta"


@attrs.frozen
class TextEnd:
    index: int = attrs.field(validator=is_count)

    type: ClassVar[str] = "text_end"


@attrs.frozen
class ThinkingStart:
    index: int = attrs.field(validator=is_count)
    redacted: bool = attrs.field(default=False, validator=is_bool)

    type: ClassVar[str] = "thinking_start"


@attrs.frozen
class ThinkingDelta:
    index: int = attrs.field(validator=is_count)
    text: str = attrs.field(default="", validator=is_str)
    #: A fragment of the provider's signature (or of the redacted payload).
    signature: str = attrs.field(default="", validator=is_str)

    type: ClassVar[str] = "thinking_delta"


@attrs.frozen
class ThinkingEnd:
    index: int = attrs.field(validator=is_count)
    #: The provider's item id, for providers that replay reasoning by id.
    id: str | None = attrs.field(default=None, validator=is_optional_str)

    type: ClassVar[str] = "thinking_end"


@attrs.frozen
class ToolCallStart:
    index: int = attrs.field(validator=is_count)
    id: str = attrs.field(validator=is_str)
    name: str = attrs.field(validator=is_str)

    type: ClassVar[str] = "tool_call_start"


@attrs.frozen
class ToolCallDelta:
    index: int = attrs.field(validator=is_count)
    #: A fragment of the JSON arguments.
    arguments: str = attrs.field(validator=is_str)

    type: ClassVar[str] = "tool_call_delta"


@attrs.frozen
class ToolCallEnd:
    index: int = attrs.field(validator=is_count)

    type: ClassVar[str] = "tool_call_end"


@attrs.frozen
class Done:
    stop_reason: StopReason
    usage: Usage = attrs.field(factory=Usage)

    type: ClassVar[str] = "done"


@attrs.frozen
class StreamError:
    error: ProviderError

    type: ClassVar[str] = "error"


StreamEvent = (
    StreamStart
    | TextStart
    | TextDelta
    | TextEnd
    | ThinkingStart
    | ThinkingDelta
    | ThinkingEnd
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | Done
    | StreamError
)

register_tagged_union(StreamEvent, "type")
