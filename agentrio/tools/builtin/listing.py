"""``ls`` and ``glob``: what is in the workspace."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

import trio

from ..output import cap_lines
from ..tool import Tool, ToolContext
from .common import PATH_IN_WORKSPACE, ToolInputError, object_schema, reports_errors
from .workspace import Workspace

MAX_ENTRIES = 1000

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
root, sorted, folders with a trailing "/"; .git is skipped. At most \
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
    found = []
    for count, path in enumerate(directory.glob(pattern)):
        if count % 1000 == 0:
            trio.from_thread.check_cancelled()
        # A symlinked folder can lead a pattern out of the workspace.
        if ".git" not in path.relative_to(directory).parts and workspace.contains(path):
            found.append(path)
    if not found:
        return f"No paths match {pattern!r} in {workspace.show(directory)}"
    found.sort(key=lambda p: p.parts)
    shown = [workspace.show(p) + ("/" if p.is_dir() else "") for p in found]
    return "\n".join(cap_lines(shown, MAX_ENTRIES, "paths", "use a narrower pattern"))
