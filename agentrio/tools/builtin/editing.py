"""``write`` and ``edit``: the tools that change files, atomically."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import attrs
import trio

from ..output import cap_lines
from ..tool import Tool, ToolContext, ToolResult
from .common import PATH_IN_WORKSPACE, ToolInputError, object_schema, reports_errors
from .text import atomic_replace, check_regular, read_text, size_of, unified_diff
from .workspace import Workspace

#: How many lines of a diff a result or an approval summary shows.
MAX_DIFF_LINES = 400

WRITE_DESCRIPTION = """\
Write a file: create it (with any missing parent folders) or replace its \
whole content. The file is replaced atomically and keeps its permissions. \
To change part of an existing file, use edit instead."""

WRITE_PARAMETERS = object_schema(
    {
        "path": {"type": "string", "description": f"The file to write, {PATH_IN_WORKSPACE}."},
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "path",
    "content",
)

EDIT_DESCRIPTION = """\
Replace an exact piece of text in a file. old_string must occur exactly once \
in the file (copy it from read's output without the line numbers, with its \
whitespace and indentation; add surrounding lines to make it unique), unless \
replace_all is set. Returns the change as a unified diff."""

EDIT_PARAMETERS = object_schema(
    {
        "path": {"type": "string", "description": f"The file to edit, {PATH_IN_WORKSPACE}."},
        "old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
        "new_string": {"type": "string", "description": "The text to put in its place."},
        "replace_all": {
            "type": "boolean",
            "default": False,
            "description": "Replace every occurrence of old_string instead of exactly one.",
        },
    },
    "path",
    "old_string",
    "new_string",
)


def write(root: Workspace | str | os.PathLike[str], *, read_only: bool = False) -> Tool:
    """The ``write`` tool for the workspace ``root``; ``read_only`` (a
    read-only sandbox) refuses every call as the kernel refuses commands."""
    workspace = Workspace.of(root)

    @reports_errors
    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        if read_only:
            _refuse(workspace, args["path"], ctx)
        return await trio.to_thread.run_sync(_write, workspace, args["path"], args["content"])

    async def preview(args: dict[str, Any]) -> str:
        return await trio.to_thread.run_sync(_describe_write, workspace, args["path"], args["content"])

    return Tool(
        "write", WRITE_DESCRIPTION, WRITE_PARAMETERS, execute, execution_mode="exclusive", preview=preview
    )


def edit(root: Workspace | str | os.PathLike[str], *, read_only: bool = False) -> Tool:
    """The ``edit`` tool for the workspace ``root``; ``read_only`` as for ``write``."""
    workspace = Workspace.of(root)

    @reports_errors
    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if read_only:
            _refuse(workspace, args["path"], ctx)
        planned = await trio.to_thread.run_sync(_plan_edit, workspace, args)
        await trio.to_thread.run_sync(atomic_replace, planned.path, planned.after.encode())
        return edit_result(planned.shown, planned.replacements, planned.diff)

    async def preview(args: dict[str, Any]) -> str:
        planned = await trio.to_thread.run_sync(_plan_edit, workspace, args)
        return f"Edit {planned.shown}:\n{planned.diff}"

    return Tool(
        "edit", EDIT_DESCRIPTION, EDIT_PARAMETERS, execute, execution_mode="exclusive", preview=preview
    )


def _refuse(workspace: Workspace, path_arg: str, ctx: ToolContext) -> None:
    path = workspace.resolve(path_arg)
    error = OSError(errno.EROFS, os.strerror(errno.EROFS), path_arg)
    ctx.sandbox_denied("path", str(path), f"{error.strerror}: {path_arg}")
    raise error


def _target(workspace: Workspace, path_arg: str) -> tuple[Path, str]:
    path = workspace.resolve(path_arg)
    shown = workspace.show(path)
    if path.is_dir():
        raise ToolInputError(f"{shown} is a directory, not a file")
    if path.exists():
        check_regular(path.stat().st_mode, shown)
    return path, shown


def _write(workspace: Workspace, path_arg: str, content: str) -> str:
    path, shown = _target(workspace, path_arg)
    existed = path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_replace(path, content.encode())
    return f"{'Replaced' if existed else 'Created'} {shown} ({size_of(content)})"


def _describe_write(workspace: Workspace, path_arg: str, content: str) -> str:
    path, shown = _target(workspace, path_arg)
    size = size_of(content)
    if not path.exists():
        return f"Create {shown} ({size})"
    try:
        before = read_text(path, shown)
    except ToolInputError:
        return f"Overwrite {shown}, not a text file ({path.stat().st_size:,} bytes), with {size}"
    diff = _capped(unified_diff(before, content, shown)) or "(the content is the same)\n"
    return f"Overwrite {shown} ({size}):\n{diff}"


@attrs.frozen
class _PlannedEdit:
    path: Path
    shown: str
    after: str
    replacements: int
    diff: str


def _plan_edit(workspace: Workspace, args: dict[str, Any]) -> _PlannedEdit:
    """What an edit would change, or why it cannot be made."""
    path = workspace.existing(args["path"])
    shown = workspace.show(path)
    before = read_text(path, shown)
    after, count = replace_text(before, args, shown)
    return _PlannedEdit(path, shown, after, count, edit_diff(before, after, shown))


def replace_text(before: str, args: dict[str, Any], shown: str) -> tuple[str, int]:
    """``before`` with the edit ``args`` asks for made, and how many
    replacements that took; ``ToolInputError`` when it cannot be made."""
    old, new = args["old_string"], args["new_string"]
    if old == new:
        raise ToolInputError("old_string and new_string are the same; there is nothing to change")
    count = before.count(old)
    if count == 0:
        raise ToolInputError(
            f"old_string was not found in {shown}; read the file and copy the text exactly, "
            "with its whitespace and indentation"
        )
    if count > 1 and not args.get("replace_all", False):
        raise ToolInputError(
            f"old_string occurs {count} times in {shown}; include more surrounding lines to make "
            "it unique, or set replace_all to replace every occurrence"
        )
    return before.replace(old, new), count


def edit_diff(before: str, after: str, shown: str) -> str:
    """The unified diff of an edit, capped for a result or a summary."""
    return _capped(unified_diff(before, after, shown))


def edit_result(shown: str, replacements: int, diff: str) -> ToolResult:
    """What ``edit`` answers once the file is changed."""
    times = "once" if replacements == 1 else f"{replacements} times"
    return ToolResult(
        f"Edited {shown} (replaced {times}):\n{diff}",
        details={"path": shown, "replacements": replacements, "diff": diff},
    )


def _capped(diff: str) -> str:
    lines = cap_lines(diff.splitlines(), MAX_DIFF_LINES, "diff lines")
    return "\n".join(lines) + "\n" if lines else ""
