"""``read``: a text file's lines, numbered, a range at a time."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import trio

from ..tool import Tool, ToolContext
from .common import PATH_IN_WORKSPACE, ToolInputError, object_schema, reports_errors
from .text import SNIFF_BYTES, decode, open_regular, refuse_binary
from .workspace import Workspace

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_CHARS = 50_000

DESCRIPTION = """\
Read a text file. Lines come numbered ("  12\\tline"), at most {max_lines} \
at a time and {max_chars:,} characters in all; a longer file ends with a note \
telling the offset to read on from. Lines longer than {max_line_chars} \
characters are cut. Binary files are refused."""

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
    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        path = workspace.existing(args["path"])
        offset, limit = args.get("offset", 1), args.get("limit", MAX_LINES)
        return await trio.to_thread.run_sync(
            _numbered_lines, path, workspace.show(path), offset, limit, max_chars
        )

    description = DESCRIPTION.format(max_lines=MAX_LINES, max_chars=max_chars, max_line_chars=MAX_LINE_CHARS)
    return Tool("read", description, PARAMETERS, execute, execution_mode="parallel")


def _numbered_lines(path: Path, shown: str, offset: int, limit: int, max_chars: int) -> str:
    if path.is_dir():
        raise ToolInputError(f"{shown} is a directory; use ls to list it")
    shown_lines: list[str] = []
    size = 0
    number = 0
    with open_regular(path, shown) as f:
        refuse_binary(f.read(SNIFF_BYTES), shown)
        f.seek(0)
        for number, raw in enumerate(f, start=1):
            if number < offset:
                continue
            if len(shown_lines) == limit or size >= max_chars:
                total = os.fstat(f.fileno()).st_size
                note = f"[{shown} goes on ({total:,} bytes in all); read on with offset={number}]"
                return "\n".join([*shown_lines, note])
            line = decode(raw, shown).rstrip("\r\n")
            if len(line) > MAX_LINE_CHARS:
                cut = len(line) - MAX_LINE_CHARS
                line = f"{line[:MAX_LINE_CHARS]} [... {cut:,} more characters on this line]"
            shown_lines.append(f"{number:>6}\t{line}")
            size += len(shown_lines[-1]) + 1
    if number == 0:
        return f"{shown} is empty"
    if not shown_lines:
        raise ToolInputError(f"offset {offset} is past the end of {shown}, which has {number} lines")
    return "\n".join(shown_lines)

