"""Numbering the content blocks of a normalized stream."""

from __future__ import annotations

from .events import StreamEvent, TextEnd, ThinkingEnd, ToolCallEnd

EndEvent = type[TextEnd] | type[ThinkingEnd] | type[ToolCallEnd]


class Blocks:
    """Gives each block the next index as it starts, remembers which blocks
    are open, and closes them."""

    def __init__(self) -> None:
        self._next = 0
        self._open: dict[int, EndEvent] = {}

    def start(self, end: EndEvent) -> int:
        """Open a block that ``end`` will close; returns its index."""
        index = self._next
        self._next += 1
        self._open[index] = end
        return index

    def end(self, index: int, **fields: str | None) -> StreamEvent:
        return self._open.pop(index)(index, **fields)

    def end_all(self) -> list[StreamEvent]:
        return [self.end(index) for index in list(self._open)]

    @property
    def count(self) -> int:
        """How many blocks have started."""
        return self._next
