"""The normalized stream every model adapter emits.

A stream is ``StreamStart``, then content blocks, then ``Done``. Each block
is opened by a ``*Start`` event, grows by ``*Delta`` events and is closed by
an ``*End`` event; blocks are numbered by ``index`` in the order they start
and may interleave. Tool-call arguments arrive as fragments of one JSON
document. A stream that fails ends with ``StreamError`` instead of
``Done`` (or the adapter raises ``ProviderError``, which means the same).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from ..messages import StopReason, Usage, register_tagged_union
from .errors import ProviderError


@attrs.frozen
class StreamStart:
    model: str = ""
    provider: str = ""

    type: ClassVar[str] = "start"


@attrs.frozen
class TextStart:
    index: int

    type: ClassVar[str] = "text_start"


@attrs.frozen
class TextDelta:
    index: int
    text: str

    type: ClassVar[str] = "text_delta"


@attrs.frozen
class TextEnd:
    index: int

    type: ClassVar[str] = "text_end"


@attrs.frozen
class ThinkingStart:
    index: int
    redacted: bool = False

    type: ClassVar[str] = "thinking_start"


@attrs.frozen
class ThinkingDelta:
    index: int
    text: str = ""
    #: A fragment of the provider's signature (or of the redacted payload).
    signature: str = ""

    type: ClassVar[str] = "thinking_delta"


@attrs.frozen
class ThinkingEnd:
    index: int
    #: The provider's item id, for providers that replay reasoning by id.
    id: str | None = None

    type: ClassVar[str] = "thinking_end"


@attrs.frozen
class ToolCallStart:
    index: int
    id: str
    name: str

    type: ClassVar[str] = "tool_call_start"


@attrs.frozen
class ToolCallDelta:
    index: int
    #: A fragment of the JSON arguments.
    arguments: str

    type: ClassVar[str] = "tool_call_delta"


@attrs.frozen
class ToolCallEnd:
    index: int

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
