"""Stored sessions as a tree: a child agent's session under the session of
the agent that spawned it, a fork under the session it was cut from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from ..journal import SessionInfo, SessionSummary


@attrs.frozen
class Node:
    """A session's line in the tree."""

    summary: SessionSummary
    #: The drawing before its id (``""`` at the top, ``"│  └─ "`` deeper).
    prefix: str
    #: The sessions its agent spawned, and the forks cut from it, that the
    #: store holds.
    children: tuple[str, ...]
    forks: tuple[str, ...]
    #: The session it hangs from (spawner or fork source) is not in the store.
    orphan: bool

    @property
    def relation(self) -> str:
        """``child of X`` / ``fork of X (N messages)``, marked ``[deleted]``
        when X is gone; ``-`` for a session that hangs from none."""
        info = self.summary.info
        if info.spawned_by is not None:
            relation = f"child of {info.spawned_by}"
        elif info.parent_session_id is not None:
            relation = f"fork of {info.parent_session_id} ({info.seed_length} messages)"
        else:
            return "-"
        return f"{relation} [deleted]" if self.orphan else relation


def _hangs_from(info: SessionInfo) -> str | None:
    return info.spawned_by if info.spawned_by is not None else info.parent_session_id


def session_tree(summaries: Sequence[SessionSummary]) -> list[Node]:
    """Every session once, in the order of ``summaries`` under each parent,
    each followed by its subtree. A session whose parent is not in the store
    is at the top, marked orphan; so is one of a cycle (which only a damaged
    store holds), rather than being left out."""
    ids = {summary.info.session_id for summary in summaries}
    under: dict[str | None, list[SessionSummary]] = {}
    children: dict[str, list[str]] = {}
    forks: dict[str, list[str]] = {}
    for summary in summaries:
        info = summary.info
        parent = _hangs_from(info)
        under.setdefault(parent if parent in ids else None, []).append(summary)
        if info.spawned_by in ids:
            children.setdefault(info.spawned_by, []).append(info.session_id)
        if info.parent_session_id in ids:
            forks.setdefault(info.parent_session_id, []).append(info.session_id)

    nodes: list[Node] = []
    placed: set[str] = set()

    def place(summary: SessionSummary, prefix: str, below: str) -> None:
        session_id = summary.info.session_id
        placed.add(session_id)
        parent = _hangs_from(summary.info)
        nodes.append(
            Node(
                summary,
                prefix,
                tuple(children.get(session_id, ())),
                tuple(forks.get(session_id, ())),
                orphan=parent is not None and parent not in ids,
            )
        )
        subtree = [s for s in under.get(session_id, ()) if s.info.session_id not in placed]
        for i, child in enumerate(subtree):
            last = i == len(subtree) - 1
            place(child, below + ("└─ " if last else "├─ "), below + ("   " if last else "│  "))

    for summary in [*under.get(None, ()), *summaries]:
        if summary.info.session_id not in placed:
            place(summary, "", "")
    return nodes


def spawned_below(infos: Iterable[SessionInfo], session_id: str) -> list[str]:
    """The sessions spawned by ``session_id``'s agent, by their agents and
    so on, deepest first (so that deleting them in order never leaves a
    child without its parent)."""
    spawned: dict[str, list[str]] = {}
    for info in infos:
        if info.spawned_by is not None:
            spawned.setdefault(info.spawned_by, []).append(info.session_id)
    found: list[str] = []
    seen = {session_id}

    def visit(parent: str) -> None:
        for child in spawned.get(parent, ()):
            if child not in seen:
                seen.add(child)
                visit(child)
                found.append(child)

    visit(session_id)
    return found
