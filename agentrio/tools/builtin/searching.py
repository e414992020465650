"""``grep``: search file contents with a regular expression.

ripgrep does the search when it is on PATH, a Python walk otherwise; both
visit the same files in the same order (names sorted folder by folder, .git
and symlinks skipped, binary files skipped, ignore files not read) and stop
at the same number of matches, so the result reads the same either way.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import trio

from ..tool import Tool, ToolContext
from .common import PATH_IN_WORKSPACE, object_schema, reports_errors
from .search_python import search_python
from .search_ripgrep import search_ripgrep
from .search_types import Found, Search
from .text import check_regular
from .workspace import Workspace

MAX_MATCHES = 200
MAX_LINE_CHARS = 300

DESCRIPTION = """\
Search file contents for a regular expression. Prints "path:line:text" for \
each matching line, paths relative to the workspace root, in path order; at \
most {max_matches} matches. Searches every file under path (hidden ones too) \
except .git and binary files. Regular expressions use the common syntax \
(classes, groups, alternation, anchors, \\b, \\d, \\s, \\w); no look-around \
and no backreferences."""

PARAMETERS = object_schema(
    {
        "pattern": {"type": "string", "minLength": 1, "description": "The regular expression to search for."},
        "path": {
            "type": "string",
            "default": ".",
            "description": f"The file or directory to search, {PATH_IN_WORKSPACE}. Defaults to the root.",
        },
        "glob": {
            "type": "string",
            "description": (
                'Search only files whose name matches this glob, such as "*.py"; a glob with '
                'a "/" matches the path from the root ("src/**/*.ts"); a leading "!" excludes.'
            ),
        },
        "ignore_case": {"type": "boolean", "default": False, "description": "Match letters in any case."},
    },
    "pattern",
)


def grep(
    root: Workspace | str | os.PathLike[str],
    *,
    ripgrep: bool = True,
    max_matches: int = MAX_MATCHES,
) -> Tool:
    """The ``grep`` tool for the workspace ``root``. With ``ripgrep=False``
    it never uses ripgrep, even when it is installed."""
    workspace = Workspace.of(root)

    @reports_errors
    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        base = workspace.existing(args.get("path", "."))
        if not base.is_dir():
            check_regular(base.stat().st_mode, workspace.show(base))
        search = Search(
            workspace=workspace,
            pattern=args["pattern"],
            base=base,
            glob=args.get("glob"),
            ignore_case=args.get("ignore_case", False),
            limit=max_matches,
        )
        rg = shutil.which("rg") if ripgrep else None
        if rg is not None:
            found = await search_ripgrep(rg, search)
        else:
            found = await trio.to_thread.run_sync(search_python, search)
        return _report(search, found)

    description = DESCRIPTION.format(max_matches=max_matches)
    return Tool("grep", description, PARAMETERS, execute, execution_mode="parallel")


def _report(search: Search, found: Found) -> str:
    if not found.matches:
        return f"No matches for {search.pattern!r} in {search.workspace.show(search.base)}"
    lines = [f"{m.path}:{m.line}:{_shorten(m.text)}" for m in found.matches]
    if found.more:
        lines.append(
            f"[... stopped at {len(found.matches)} matches; more follow: narrow the pattern, the path or the glob]"
        )
    return "\n".join(lines)


def _shorten(text: str) -> str:
    text = text.removesuffix("\r")
    if len(text) <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]} [... {len(text) - MAX_LINE_CHARS:,} more characters]"
