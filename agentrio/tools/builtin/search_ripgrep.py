"""The search through ripgrep, read from its JSON output as it streams, and
stopped as soon as enough matches are in."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import trio

from ..process import run_process
from .common import ToolInputError
from .search_types import Found, Match, Search

#: ripgrep's own output is parsed as it comes; only its error text is kept.
_ERROR_CAP = 10_000


async def search_ripgrep(rg: str, search: Search) -> Found:
    collector = _Collector(search.limit)
    with trio.CancelScope() as enough:
        collector.on_enough = enough.cancel
        result = await run_process(
            _command(rg, search),
            cwd=search.workspace.root,
            on_output=collector.feed,
            output_cap=_ERROR_CAP,
        )
        # Exit status 1 is "no match"; 2 is an error, or only a skipped
        # unreadable file (its message is silenced, as the Python search
        # skips such files silently too).
        if result.exit_code not in (0, 1) and result.stderr.strip():
            raise ToolInputError(f"grep failed: {result.stderr.strip()}")
    return Found(collector.matches, more=collector.more)


def _command(rg: str, search: Search) -> list[str]:
    # --sort path makes ripgrep search on one thread, but in a stable order
    # that finds the same first matches as the Python search.
    command = [rg, "--json", "--sort", "path", "--hidden", "--no-ignore", "--no-messages"]
    command += ["--glob", "!.git"]
    if search.glob is not None:
        command += ["--glob", search.glob]
    if search.ignore_case:
        command.append("--ignore-case")
    command += ["--regexp", search.pattern, "--"]
    where = search.workspace.show(search.base)
    if where != ".":
        command.append(where)  # relative, so that ripgrep prints paths from the root
    return command


class _Collector:
    """Turns ripgrep's JSON lines into matches; at the first match past the
    limit it sets ``more`` and calls ``on_enough``."""

    def __init__(self, limit: int) -> None:
        self.matches: list[Match] = []
        self.more = False
        self.on_enough: Callable[[], None] = lambda: None
        self._limit = limit
        self._partial = ""

    def feed(self, stream: str, text: str) -> None:
        if stream != "stdout" or self.more:
            return
        *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            event = json.loads(line)
            if event["type"] != "match":
                continue
            if len(self.matches) == self._limit:
                self.more = True
                self.on_enough()
                return
            data = event["data"]
            self.matches.append(
                Match(_text(data["path"]), data["line_number"], _text(data["lines"]).removesuffix("\n"))
            )


def _text(value: dict[str, Any]) -> str:
    """ripgrep gives text that is not UTF-8 as base64 bytes."""
    if "text" in value:
        text: str = value["text"]
        return text
    return base64.b64decode(value["bytes"]).decode("utf-8", errors="replace")
