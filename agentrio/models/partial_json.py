"""Reading the JSON a model is still writing.

``parse_partial_json`` turns a prefix of a JSON document into the most that
can be said of it so far: open strings are closed where they stop, open
objects and arrays are closed, and a trailing fragment that cannot yet be
a value (``tru``, ``"ke``, ``"key":``, a dangling comma) is left out. It
never raises and runs in time linear in the text; ``PartialJSON`` follows
a stream fragment by fragment without scanning any text twice.
"""

from __future__ import annotations

import json
import re
from typing import Any

_CLOSERS = {"{": "}", "[": "]"}
_SCALAR_START = set("-0123456789tfn")
_DELIMITERS = set(",}] \t\r\n:")


def parse_partial_json(text: str) -> Any | None:
    """The value a prefix of a JSON document stands for so far, or ``None``
    when nothing is known yet (or the text is not JSON at all)."""
    reader = PartialJSON()
    reader.feed(text)
    return reader.value()


class PartialJSON:
    """A JSON document read as it streams in: ``feed`` each fragment, then
    ``value()`` is ``parse_partial_json`` of everything fed so far.

    Each character is scanned once, so following a stream costs time linear
    in its length plus one C-speed ``json.loads`` per ``value()``.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._scanner = _Scanner()

    def feed(self, fragment: str) -> None:
        self._scanner.scan(fragment, self._length)
        self._parts.append(fragment)
        self._length += len(fragment)

    def value(self) -> Any | None:
        text = "".join(self._parts)
        self._parts = [text]
        scanner = self._scanner
        candidates = []
        if scanner.in_string and scanner.string_is_value:
            candidates.append(_without_open_escape(text) + '"' + scanner.closers())
        elif not scanner.in_string:
            candidates.append(text + scanner.closers())  # the whole text, when complete
        if scanner.last_cut is not None:
            candidates.append(text[: scanner.last_cut[0]] + scanner.last_cut[1])
        for candidate in candidates:
            try:
                return json.loads(candidate)
            except (ValueError, RecursionError):  # nested too deep for the parser
                continue
        return None


# An escape cut short (``\``, ``\u12``), or the first half of a surrogate
# pair (``\ud83d``) whose second half is still to come.
_OPEN_ESCAPE = re.compile(r"(\\+)(u[0-9a-fA-F]{0,3}|u[dD][89abAB][0-9a-fA-F]{2})?$")


def _without_open_escape(text: str) -> str:
    # Twice: ``\ud83d\`` is a cut escape after a first half.
    for _ in range(2):
        match = _OPEN_ESCAPE.search(text)
        if not match or len(match.group(1)) % 2 == 0:  # an even run escapes itself
            break
        text = text[: match.start() + len(match.group(1)) - 1]
    return text


class _Scanner:
    """Tracks, character by character, the open containers and the last
    place where the text could be cut and closed into valid JSON."""

    def __init__(self) -> None:
        # Per open container: its bracket and whether a key comes next
        # (objects) — a string read there is a key, not a value.
        self.stack: list[list[Any]] = []
        self.in_string = False
        self.string_is_value = True
        self.escape = False
        self.in_scalar = False
        self.last_cut: tuple[int, str] | None = None
        #: A bracket closed that was never opened: nothing more can be said.
        self.broken = False

    def closers(self) -> str:
        return "".join(_CLOSERS[frame[0]] for frame in reversed(self.stack))

    def _value_ended(self, end: int) -> None:
        self.last_cut = (end, self.closers())

    def _expects_key(self) -> bool:
        return bool(self.stack) and self.stack[-1][0] == "{" and self.stack[-1][1]

    def scan(self, text: str, offset: int = 0) -> None:
        if self.broken:
            return
        for i, ch in enumerate(text, offset):
            if self.in_string:
                if self.escape:
                    self.escape = False
                elif ch == "\\":
                    self.escape = True
                elif ch == '"':
                    self.in_string = False
                    if self.string_is_value:
                        self._value_ended(i + 1)
                continue
            if self.in_scalar:
                if ch not in _DELIMITERS:
                    continue
                self.in_scalar = False
                self._value_ended(i)
            if ch == '"':
                self.in_string = True
                self.string_is_value = not self._expects_key()
            elif ch in "{[":
                self.stack.append([ch, ch == "{"])
                self._value_ended(i + 1)
            elif ch in "}]":
                if not self.stack:
                    self.broken = True
                    return
                self.stack.pop()
                self._value_ended(i + 1)
            elif ch == ",":
                if self.stack and self.stack[-1][0] == "{":
                    self.stack[-1][1] = True
            elif ch == ":":
                if self.stack:
                    self.stack[-1][1] = False
            elif ch in _SCALAR_START:
                self.in_scalar = True
