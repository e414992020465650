"""Reading a person's keys and lines from the terminal, under trio.

The terminal is opened afresh (its device, not a duplicate of stdin), so the
non-blocking mode trio needs applies to our reading only and never to the
stdout or stderr that share stdin's open file. ``cbreak`` mode (keys one by
one, no echo, Ctrl-C as a key) is restored however the block ends.
"""

from __future__ import annotations

import codecs
import os
import sys
import termios
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import IO

import attrs
import trio

ESC = "\x1b"
CTRL_C = "\x03"
CTRL_D = "\x04"
ENTER = "\r"
BACKSPACE = ("\x7f", "\x08")
#: Keys the key reader gives for an escape sequence it does not name.
UNKNOWN = "unknown"


def stdin_is_terminal() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (ValueError, OSError):
        return False


@asynccontextmanager
async def open_terminal() -> AsyncIterator[trio.lowlevel.FdStream]:
    """A stream reading the terminal that stdin is."""
    fd = os.open(os.ttyname(sys.stdin.fileno()), os.O_RDONLY | os.O_NOCTTY)
    stream = trio.lowlevel.FdStream(fd)
    try:
        yield stream
    finally:
        await stream.aclose()


@contextmanager
def cbreak(fd: int) -> Iterator[None]:
    """Keys arrive one by one, unechoed, Ctrl-C and Esc included; output is
    unchanged. The settings before are restored on the way out."""
    saved = termios.tcgetattr(fd)
    mode = termios.tcgetattr(fd)
    mode[3] &= ~(termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN)
    mode[0] &= ~(termios.IXON | termios.ICRNL)
    mode[6][termios.VMIN] = 1
    mode[6][termios.VTIME] = 0
    termios.tcsetattr(fd, termios.TCSANOW, mode)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


@contextmanager
def bracketed_paste(out: IO[str]) -> Iterator[None]:
    """While it lasts, the terminal marks pasted text (``Paste``) instead of typing it key by key."""
    out.write(BRACKETED_PASTE_ON)
    out.flush()
    try:
        yield
    finally:
        out.write(BRACKETED_PASTE_OFF)
        out.flush()


async def read_line(stream: trio.abc.ReceiveStream) -> str | None:
    """One line typed in the terminal's usual (canonical) mode; None at its end."""
    data = await stream.receive_some(4096)
    if not data:
        return None
    return data.decode(errors="replace").rstrip("\r\n")


@attrs.frozen
class Paste:
    """Text pasted while the terminal's bracketed paste was on: one piece, newlines and all."""

    text: str


#: Named keys the decoder gives for escape sequences.
LEFT, RIGHT, UP, DOWN = "left", "right", "up", "down"
HOME, END, DELETE = "home", "end", "delete"
WORD_LEFT, WORD_RIGHT = "word-left", "word-right"
ALT_ENTER, ALT_BACKSPACE, ALT_D = "alt-enter", "alt-backspace", "alt-d"

_FINAL = {"A": UP, "B": DOWN, "C": RIGHT, "D": LEFT, "H": HOME, "F": END}
_TILDE = {"1": HOME, "7": HOME, "4": END, "8": END, "3": DELETE}
_ALT = {
    "\r": ALT_ENTER,
    "\n": ALT_ENTER,
    "\x7f": ALT_BACKSPACE,
    "\x08": ALT_BACKSPACE,
    "b": WORD_LEFT,
    "f": WORD_RIGHT,
    "d": ALT_D,
}
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
#: Turns bracketed paste on and off (the terminal wraps pasted text in PASTE_START … PASTE_END).
BRACKETED_PASTE_ON, BRACKETED_PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"
#: The longest paste kept; the rest is dropped rather than held in memory.
MAX_PASTE = 1 << 20
#: The longest unfinished escape sequence held for the next read.
MAX_SEQUENCE = 64


class KeyDecoder:
    """Turns what the terminal sends into keys: a character, ``ESC`` alone,
    a named key (``LEFT``, ``HOME``, ``ALT_ENTER``…), a ``Paste``, or
    ``UNKNOWN`` for an escape sequence that names nothing here. A sequence
    cut between two reads is kept until its end arrives; an Esc that ends a
    read is the Esc key (terminals write a sequence at once)."""

    def __init__(self) -> None:
        self._pending = ""
        self._paste: list[str] | None = None
        self._pasted = 0

    def feed(self, text: str) -> list[str | Paste]:
        text, self._pending = self._pending + text, ""
        found: list[str | Paste] = []
        i = 0
        while i < len(text):
            if self._paste is not None:
                end = text.find(PASTE_END, i)
                if end < 0:
                    # Keep a tail that may be the start of PASTE_END.
                    keep = _partial_suffix(text, PASTE_END)
                    self._add_pasted(text[i : len(text) - keep])
                    self._pending = text[len(text) - keep :]
                    return found
                self._add_pasted(text[i:end])
                found.append(Paste("".join(self._paste)))
                self._paste = None
                i = end + len(PASTE_END)
                continue
            char = text[i]
            if char != ESC:
                found.append(char)
                i += 1
                continue
            if i + 1 == len(text):
                found.append(ESC)
                break
            after = text[i + 1]
            if after not in "[O":
                found.append(_ALT.get(after, UNKNOWN))
                i += 2
                continue
            # CSI or SS3: parameters, then one final letter or ~.
            j = i + 2
            while j < len(text) and not (text[j].isalpha() or text[j] == "~"):
                j += 1
            if j == len(text):
                if len(text) - i <= MAX_SEQUENCE:
                    self._pending = text[i:]
                else:  # no terminal sends such a sequence: dropped, not held without end
                    found.append(UNKNOWN)
                break
            sequence = text[i : j + 1]
            i = j + 1
            if sequence == PASTE_START:
                self._paste, self._pasted = [], 0
                continue
            found.append(_named(sequence[2:-1], sequence[-1]))
        return found

    def _add_pasted(self, text: str) -> None:
        room = MAX_PASTE - self._pasted
        if self._paste is not None and text and room > 0:
            self._paste.append(text[:room])
            self._pasted += min(len(text), room)


def _partial_suffix(text: str, marker: str) -> int:
    """How many of ``text``'s last characters begin ``marker``."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0


def _named(parameters: str, final: str) -> str:
    if final == "~":
        return _TILDE.get(parameters.partition(";")[0], UNKNOWN)
    key = _FINAL.get(final, UNKNOWN)
    # Ctrl or Alt with an arrow (1;5C, 1;3D): a word at a time.
    if parameters.endswith((";5", ";3")) and key in (LEFT, RIGHT):
        return WORD_LEFT if key == LEFT else WORD_RIGHT
    return key


async def keys(stream: trio.abc.ReceiveStream) -> AsyncIterator[str | Paste]:
    """The keys typed in cbreak mode (see ``KeyDecoder``), until the terminal ends."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    keys = KeyDecoder()
    while data := await stream.receive_some(4096):
        for key in keys.feed(decoder.decode(data)):
            yield key
