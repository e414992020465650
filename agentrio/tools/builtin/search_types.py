"""What a search asks for and what it finds, whichever engine runs it."""

from __future__ import annotations

from pathlib import Path

import attrs

from .workspace import Workspace


@attrs.frozen
class Search:
    workspace: Workspace
    pattern: str
    base: Path
    glob: str | None
    ignore_case: bool
    limit: int


@attrs.frozen
class Match:
    path: str
    line: int
    text: str


@attrs.frozen
class Found:
    """The first matches in path order; ``more`` when the limit cut the
    search short."""

    matches: list[Match]
    more: bool
