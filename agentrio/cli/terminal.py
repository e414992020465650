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


async def read_line(stream: trio.abc.ReceiveStream) -> str | None:
    """One line typed in the terminal's usual (canonical) mode; None at its end."""
    data = await stream.receive_some(4096)
    if not data:
        return None
    return data.decode(errors="replace").rstrip("\r\n")


async def keys(stream: trio.abc.ReceiveStream) -> AsyncIterator[str]:
    """The keys typed in cbreak mode: a character, ``ESC`` alone, or
    ``UNKNOWN`` for an escape sequence (arrows, function keys) we do not use.
    Pasted text arrives as its characters."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while data := await stream.receive_some(4096):
        text = decoder.decode(data)
        i = 0
        while i < len(text):
            char = text[i]
            if char == ESC and i + 1 < len(text) and text[i + 1] in "[O":
                # CSI or SS3 sequence: ends at its first letter or ~.
                j = i + 2
                while j < len(text) and not (text[j].isalpha() or text[j] == "~"):
                    j += 1
                i = j + 1
                yield UNKNOWN
                continue
            yield char
            i += 1
