"""Text files as the coding tools see them: UTF-8, never binary, and their
changes as unified diffs."""

from __future__ import annotations

import difflib
import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

from .common import ToolInputError

#: How much of a file is looked at for NUL bytes, the mark of a binary file.
SNIFF_BYTES = 8192


def refuse_binary(sample: bytes, shown: str) -> None:
    if b"\0" in sample[:SNIFF_BYTES]:
        raise ToolInputError(f"{shown} is a binary file; only text files can be read or edited")


def decode(data: bytes, shown: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolInputError(f"{shown} is not UTF-8 text; it may be a binary file") from None


def check_regular(mode: int, shown: str) -> None:
    """Refuse what is not a regular file (a FIFO, a device, a socket):
    reading one may wait forever, and replacing one is never what was meant."""
    if not stat.S_ISREG(mode):
        raise ToolInputError(
            f"{shown} is {_KINDS.get(stat.S_IFMT(mode), 'a special file')}, not a regular file; "
            "the file tools act on regular files only"
        )


_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def open_regular(path: Path, shown: str) -> BinaryIO:
    """``path`` opened for reading; it must be a regular file. It is checked
    before it is opened and again once open (it may have been swapped in
    between), and opened without blocking, so a FIFO is refused, never
    waited on."""
    check_regular(os.stat(path).st_mode, shown)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        check_regular(os.fstat(fd).st_mode, shown)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text(path: Path, shown: str) -> str:
    """The whole content of a text file."""
    if path.is_dir():
        raise ToolInputError(f"{shown} is a directory, not a file")
    with open_regular(path, shown) as f:
        data = f.read()
    refuse_binary(data, shown)
    return decode(data, shown)


def size_of(text: str) -> str:
    """The size of ``text`` as a file, in words: "12 bytes, 1 line"."""
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return f"{len(text.encode()):,} bytes, {lines} line{'' if lines == 1 else 's'}"


def unified_diff(before: str, after: str, shown: str) -> str:
    """The change from ``before`` to ``after`` as ``git diff`` shows it."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{shown}",
        tofile=f"b/{shown}",
    )
    return "".join(
        line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in lines
    )


def atomic_replace(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old content or
    the new, never a mix. A replaced file keeps its permissions; a new one
    gets the usual ones (0o666 less the umask)."""
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    # Short, whatever the name's length: the name itself may be at the
    # limit of 255 bytes already.
    temporary = path.with_name(f".{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(temporary, mode)  # the umask may have narrowed it
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
