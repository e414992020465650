"""Keeping tool output within bounds, and saying what was cut.

A model's context is finite and a tool's output is not: every tool caps what
it returns, and the result always says what was left out, so that the model
knows to narrow its request instead of trusting a partial answer.
"""

from __future__ import annotations

from collections.abc import Sequence


class CappedText:
    """Text accumulated in pieces and kept within ``limit`` characters.

    The head and the tail are kept (a command's first lines say what it is
    doing, its last lines how it ended); what overflows in between is dropped
    and counted, and ``text`` puts a note in its place.
    """

    def __init__(self, limit: int) -> None:
        if limit < 2:
            raise ValueError(f"output limit must be at least 2 characters, got {limit}")
        self._head_limit = limit - limit // 2
        self._tail_limit = limit // 2
        self._head = ""
        self._tail = ""
        self.cut_chars = 0
        self.cut_lines = 0

    def append(self, text: str) -> None:
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
        if not text:
            return
        self._tail += text
        overflow = len(self._tail) - self._tail_limit
        if overflow > 0:
            dropped = self._tail[:overflow]
            self._tail = self._tail[overflow:]
            self.cut_chars += len(dropped)
            self.cut_lines += dropped.count("\n")

    @property
    def truncated(self) -> bool:
        return self.cut_chars > 0

    @property
    def text(self) -> str:
        if not self.truncated:
            return self._head + self._tail
        note = f"[... {self.cut_chars:,} characters ({self.cut_lines:,} line breaks) cut here ...]"
        return f"{self._head}\n{note}\n{self._tail}"


def cap_lines(lines: Sequence[str], limit: int, what: str, hint: str = "") -> list[str]:
    """The first ``limit`` lines, then a line saying how many ``what`` were
    left out (and ``hint``: how to see them)."""
    if len(lines) <= limit:
        return list(lines)
    note = f"[... {len(lines) - limit:,} more {what} not shown{'; ' + hint if hint else ''}]"
    return [*lines[:limit], note]
