"""``read``: a text file's lines, numbered, a range at a time."""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import Any, BinaryIO

import trio

from ...messages import MAX_IMAGE_BYTES, Image
from ...messages.media import image_type
from ..tool import Tool, ToolContext
from .common import PATH_IN_WORKSPACE, ToolInputError, object_schema, reports_errors
from .text import SNIFF_BYTES, open_regular, refuse_binary
from .workspace import Workspace

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_CHARS = 50_000
#: How much of a line is read at once: enough for MAX_LINE_CHARS characters
#: of UTF-8, and its end of line.
_HEAD_BYTES = 4 * MAX_LINE_CHARS + 2
_CHUNK = 65536

DESCRIPTION = """\
Read a text file. Lines come numbered ("  12\\tline"), at most {max_lines} \
at a time and {max_chars:,} characters in all; a longer file ends with a note \
telling the offset to read on from. Lines longer than {max_line_chars} \
characters are cut. PNG, JPEG, GIF and WebP images come back as images \
(offset and limit do not apply); other binary files are refused."""

PARAMETERS = object_schema(
    {
        "path": {"type": "string", "description": f"The file to read, {PATH_IN_WORKSPACE}."},
        "offset": {
            "type": "integer",
            "minimum": 1,
            "default": 1,
            "description": "The number of the first line to show (1 is the first line).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LINES,
            "default": MAX_LINES,
            "description": "How many lines to show at most.",
        },
    },
    "path",
)


def read(root: Workspace | str | os.PathLike[str], *, max_chars: int = MAX_CHARS) -> Tool:
    """The ``read`` tool for the workspace ``root``."""
    workspace = Workspace.of(root)

    @reports_errors
    async def execute(args: dict[str, Any], ctx: ToolContext) -> str | Image:
        path = workspace.existing(args["path"])
        offset, limit = args.get("offset", 1), args.get("limit", MAX_LINES)
        return await trio.to_thread.run_sync(
            _numbered_lines, path, workspace.show(path), offset, limit, max_chars
        )

    description = DESCRIPTION.format(max_lines=MAX_LINES, max_chars=max_chars, max_line_chars=MAX_LINE_CHARS)
    return Tool("read", description, PARAMETERS, execute, execution_mode="parallel")


def _numbered_lines(path: Path, shown: str, offset: int, limit: int, max_chars: int) -> str | Image:
    if path.is_dir():
        raise ToolInputError(f"{shown} is a directory; use ls to list it")
    shown_lines: list[str] = []
    size = 0
    number = 0
    with open_regular(path, shown) as f:
        head = f.read(SNIFF_BYTES)
        if (media_type := image_type(head)) is not None:
            return _image(f, head, media_type, shown)
        refuse_binary(head, shown)
        f.seek(0)
        while (read := _read_line(f, shown)) is not None:
            number += 1
            if number < offset:
                continue
            if len(shown_lines) == limit or size >= max_chars:
                total = os.fstat(f.fileno()).st_size
                note = f"[{shown} goes on ({total:,} bytes in all); read on with offset={number}]"
                return "\n".join([*shown_lines, note])
            line, more = read
            if more:
                line = f"{line} [... {more:,} more characters on this line]"
            shown_lines.append(f"{number:>6}\t{line}")
            size += len(shown_lines[-1]) + 1
    if number == 0:
        return f"{shown} is empty"
    if not shown_lines:
        raise ToolInputError(f"offset {offset} is past the end of {shown}, which has {number} lines")
    return "\n".join(shown_lines)


def _image(f: BinaryIO, head: bytes, media_type: str, shown: str) -> Image:
    """The image ``f`` holds (``head`` already read), if it is within the
    size every provider takes."""
    data = head + f.read(MAX_IMAGE_BYTES + 1 - len(head))
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolInputError(
            f"{shown} is an image over {MAX_IMAGE_BYTES:,} bytes, too large to send to a model"
        )
    try:
        return Image(data, media_type)
    except ValueError as exc:
        raise ToolInputError(f"{shown} is not a valid {media_type} image: {exc}") from None


def _read_line(f: BinaryIO, shown: str) -> tuple[str, int] | None:
    """The next line of ``f`` without its end of line, cut to
    ``MAX_LINE_CHARS`` characters, and how many characters were cut; None
    at the end of the file. A longer line is read and counted a chunk at a
    time, never held whole, however long it is."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        raw = f.readline(_HEAD_BYTES)
        if not raw:
            return None
        head = decoder.decode(raw)
        if len(raw) < _HEAD_BYTES or raw.endswith(b"\n"):
            line = (head + decoder.decode(b"", final=True)).rstrip("\r\n")
            return line[:MAX_LINE_CHARS], max(0, len(line) - MAX_LINE_CHARS)
        # The head holds at least MAX_LINE_CHARS characters; the rest is
        # only counted.
        rest, tail = 0, ""
        while chunk := f.readline(_CHUNK):
            piece = decoder.decode(chunk)
            rest, tail = rest + len(piece), (tail + piece)[-2:]
            if chunk.endswith(b"\n"):
                break
        rest += len(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        raise ToolInputError(f"{shown} is not UTF-8 text; it may be a binary file") from None
    end_of_line = len(tail) - len(tail.rstrip("\r\n"))
    return head[:MAX_LINE_CHARS], len(head) + rest - end_of_line - MAX_LINE_CHARS
