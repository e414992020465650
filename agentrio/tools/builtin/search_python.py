"""The search in pure Python, for when ripgrep is not installed. It follows
ripgrep's rules (see ``searching``) so that both give the same answer."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import trio

from ..regex import RegexError, compile_regex
from .common import ToolInputError
from .globbing import glob_regex
from .search_types import Found, Match, Search
from .text import SNIFF_BYTES, open_regular
from .workspace import Workspace

GlobFilter = Callable[[str, bool], bool]


def search_python(search: Search) -> Found:
    """Run ``search``; meant for a worker thread (it checks for cancellation
    between files)."""
    try:
        regex = compile_regex(search.pattern, ignore_case=search.ignore_case)
        keep = _glob_filter(search.glob)
    except RegexError as e:
        raise ToolInputError(str(e)) from None
    # An explicit file is searched whatever the glob says, as by ripgrep.
    files = [search.base] if search.base.is_file() else _walk(search.workspace, search.base, keep)
    matches: list[Match] = []
    for path in files:
        trio.from_thread.check_cancelled()
        shown = search.workspace.show(path)
        for number, text in _matching_lines(path, regex):
            if len(matches) == search.limit:
                return Found(matches, more=True)
            matches.append(Match(shown, number, text))
    return Found(matches, more=False)


def _walk(workspace: Workspace, directory: Path, keep: GlobFilter) -> Iterator[Path]:
    """The files under ``directory`` in ripgrep's ``--sort path`` order: the
    entries of each folder by name, a folder's content at its place. Walked
    without recursion, however deep the tree, checking for cancellation at
    each folder."""
    folders = [iter(_entries(directory))]
    while folders:
        entry = next(folders[-1], None)
        if entry is None:
            folders.pop()
            continue
        if entry.is_symlink():
            continue
        path = Path(entry.path)
        if entry.is_dir():
            if entry.name != ".git" and keep(workspace.show(path), True):
                trio.from_thread.check_cancelled()
                folders.append(iter(_entries(path)))
        elif entry.is_file() and keep(workspace.show(path), False):
            yield path


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as scan:
            return sorted(scan, key=lambda e: e.name)
    except OSError:
        return []  # unreadable: skipped, as ripgrep skips it


def _matching_lines(path: Path, regex: Any) -> Iterator[tuple[int, str]]:
    try:
        f = open_regular(path, str(path))
    except (OSError, ToolInputError):
        return  # skipped, as ripgrep skips what it cannot read
    with f:
        if b"\0" in f.read(SNIFF_BYTES):
            return
        f.seek(0)
        for number, raw in enumerate(f, start=1):
            if b"\0" in raw:
                return  # ripgrep, too, stops at the first NUL byte of a file
            text = raw.decode("utf-8", errors="replace").removesuffix("\n")
            if regex.search(text):
                yield number, text


def _glob_filter(glob: str | None) -> GlobFilter:
    """``keep(path, is_dir)`` for ripgrep's ``--glob``: gitignore-style,
    matched against the name alone when the glob has no "/", against the
    path from the root otherwise. An including glob selects files and lets
    the walk into every folder; an excluding one ("!...") drops folders
    whole, and files."""
    if glob is None:
        return lambda path, is_dir: True
    exclude = glob.startswith("!")
    body = glob.removeprefix("!")
    anchored = "/" in body.rstrip("/")
    regex = glob_regex(body.strip("/"))

    def keep(path: str, is_dir: bool) -> bool:
        subject = path if anchored else path.rpartition("/")[2]
        if exclude:
            return not regex.fullmatch(subject)
        return is_dir or bool(regex.fullmatch(subject))

    return keep
