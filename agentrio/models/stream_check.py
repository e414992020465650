"""Holding a stream to the rules of the normalized stream.

A mapper turns whatever a server sent into normalized events. A server that
repeats, reorders or drops its events can make a mapper emit a delta for a
block it never opened, or content after the end. ``StreamChecker`` stands
between the mapper and the consumer, so that whatever folds the stream (the
agent's ``MessageAssembler``) may rely on the rules stated in ``events.py``:
a stream that breaks them ends as an ``invalid_response``.
"""

from __future__ import annotations

from typing import Protocol, cast

from .events import (
    Done,
    StreamError,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from .provider_errors import provider_error

_BLOCK_KINDS: dict[type, str] = {
    TextStart: "text", TextDelta: "text", TextEnd: "text",
    ThinkingStart: "thinking", ThinkingDelta: "thinking", ThinkingEnd: "thinking",
    ToolCallStart: "tool call", ToolCallDelta: "tool call", ToolCallEnd: "tool call",
}  # fmt: skip


class _InBlock(Protocol):
    """An event of a block (the kinds in ``_BLOCK_KINDS``)."""

    @property
    def index(self) -> int: ...


_STARTS = frozenset({TextStart, ThinkingStart, ToolCallStart})
_ENDS = frozenset({TextEnd, ThinkingEnd, ToolCallEnd})


class StreamChecker:
    """Checks each event against those before it: a block starts once, grows
    and ends only while open and of its own kind, nothing follows ``Done`` or
    ``StreamError``, and the stream ends with one of them."""

    def __init__(self) -> None:
        self._open: dict[int, str] = {}
        self._started: set[int] = set()
        self._ended = False

    def check(self, events: list[StreamEvent]) -> list[StreamEvent]:
        """``events``, unchanged, or ``ProviderError`` at the first broken rule."""
        for event in events:
            if (problem := self._problem(event)) is not None:
                raise _invalid(problem)
        return events

    def finish(self) -> None:
        if not self._ended:
            raise _invalid("it ended without a final event")

    def _problem(self, event: StreamEvent) -> str | None:
        if self._ended:
            return f"a {event.type} event after the end"
        kind = type(event)
        block = _BLOCK_KINDS.get(kind)
        if block is None:
            self._ended = kind is Done or kind is StreamError
            return None
        index = cast("_InBlock", event).index  # (an event of a block)
        if kind in _STARTS:
            if index in self._started:
                return f"block {index} started twice"
            self._started.add(index)
            self._open[index] = block
        elif self._open.get(index) != block:
            return f"a {event.type} event for block {index}, which is not an open {block} block"
        elif kind in _ENDS:
            del self._open[index]
        return None


def _invalid(problem: str) -> Exception:
    return provider_error(
        {"type": "invalid_response", "message": f"the stream broke the event order: {problem}"}
    )
