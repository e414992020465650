"""``ls`` and ``glob``: what is in the workspace."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import trio

from ..output import cap_lines
from ..regex import RegexError
from ..tool import Tool, ToolContext
from .common import PATH_IN_WORKSPACE, ToolInputError, object_schema, reports_errors
from .globbing import glob_regex
from .text import check_regular
from .workspace import Workspace

MAX_ENTRIES = 1000
#: How many paths the glob walk visits between two checks for cancellation.
_CANCEL_CHECK_EVERY = 256

LS_DESCRIPTION = f"""\
List a directory: one entry a line, sorted by name, folders marked with a \
trailing "/", symlinks as "name@ -> target". At most {MAX_ENTRIES} entries."""

LS_PARAMETERS = object_schema(
    {
        "path": {
            "type": "string",
            "default": ".",
            "description": f"The directory to list, {PATH_IN_WORKSPACE}. Defaults to the root.",
        },
    },
)

GLOB_DESCRIPTION = f"""\
Find files and folders by name pattern, such as "**/*.py" or "src/*.ts" \
("**" spans any number of folders). Paths come relative to the workspace \
root, sorted, folders with a trailing "/"; .git is skipped and symlinked \
folders are not entered. At most \
{MAX_ENTRIES} paths."""

GLOB_PARAMETERS = object_schema(
    {
        "pattern": {
            "type": "string",
            "minLength": 1,
            "description": "The glob pattern, relative to path.",
        },
        "path": {
            "type": "string",
            "default": ".",
            "description": f"The directory to search in, {PATH_IN_WORKSPACE}. Defaults to the root.",
        },
    },
    "pattern",
)


def ls(root: Workspace | str | os.PathLike[str]) -> Tool:
    """The ``ls`` tool for the workspace ``root``."""
    workspace = Workspace.of(root)

    @reports_errors
    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        directory = _directory(workspace, args.get("path", "."))
        return await trio.to_thread.run_sync(_list, directory, workspace.show(directory))

    return Tool("ls", LS_DESCRIPTION, LS_PARAMETERS, execute, execution_mode="parallel")


def glob(root: Workspace | str | os.PathLike[str]) -> Tool:
    """The ``glob`` tool for the workspace ``root``."""
    workspace = Workspace.of(root)

    @reports_errors
    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        pattern = args["pattern"]
        relative = PurePosixPath(pattern)
        if relative.is_absolute() or ".." in relative.parts:
            raise ToolInputError(f"the pattern {pattern!r} must be relative and must not contain '..'")
        directory = _directory(workspace, args.get("path", "."))
        return await trio.to_thread.run_sync(_glob, workspace, directory, pattern)

    return Tool("glob", GLOB_DESCRIPTION, GLOB_PARAMETERS, execute, execution_mode="parallel")


def _directory(workspace: Workspace, path_arg: str) -> Path:
    directory = workspace.existing(path_arg)
    if not directory.is_dir():
        check_regular(directory.stat().st_mode, path_arg)  # a FIFO, a device: say so
        raise ToolInputError(f"{path_arg} is a file, not a directory; use read to see its content")
    return directory


def _list(directory: Path, shown: str) -> str:
    with os.scandir(directory) as scan:
        entries = sorted(scan, key=lambda e: e.name)
    if not entries:
        return f"{shown} is empty"
    return "\n".join(cap_lines([_describe(e) for e in entries], MAX_ENTRIES, "entries"))


def _describe(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name}@ -> {os.readlink(entry.path)}"
    return entry.name + "/" if entry.is_dir() else entry.name


def _glob(workspace: Workspace, directory: Path, pattern: str) -> str:
    parts = PurePosixPath(pattern).parts
    try:
        regex = glob_regex("/".join(parts))
    except RegexError as e:
        raise ToolInputError(f"invalid glob {pattern!r}: {e}") from None
    # Without "**" a pattern cannot match deeper than its own components.
    depth = None if any("**" in part for part in parts) else len(parts)
    found = [
        path for path in _walk(directory, depth) if regex.fullmatch(path.relative_to(directory).as_posix())
    ]
    # A symlink can lead out of the workspace.
    found = [path for path in found if not path.is_symlink() or workspace.contains(path)]
    if not found:
        return f"No paths match {pattern!r} in {workspace.show(directory)}"
    found.sort(key=lambda p: p.parts)
    shown = [workspace.show(p) + ("/" if p.is_dir() else "") for p in found]
    return "\n".join(cap_lines(shown, MAX_ENTRIES, "paths", "use a narrower pattern"))


def _walk(top: Path, depth: int | None) -> Iterator[Path]:
    """Every path under ``top`` down to ``depth`` levels (all with None),
    each visited once, however many "**" a pattern has; .git is skipped and
    symlinked folders are not entered. Checks for cancellation as it goes,
    so a huge tree cannot hold a cancel up."""
    todo = [(top, 1)]
    seen = 0
    while todo:
        folder, level = todo.pop()
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:
            continue  # unreadable or gone: skipped
        for entry in entries:
            seen += 1
            if seen % _CANCEL_CHECK_EVERY == 0:
                trio.from_thread.check_cancelled()
            if entry.name == ".git":
                continue
            path = Path(entry.path)
            yield path
            if entry.is_dir(follow_symlinks=False) and (depth is None or level < depth):
                todo.append((path, level + 1))
        trio.from_thread.check_cancelled()
