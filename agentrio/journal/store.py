"""Where journals live: the ``Store`` interface and the in-memory store."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

import attrs

from .records import Record


class SessionNotFound(LookupError):
    """The store holds no session with this id (and nothing is wrong)."""


class SessionExists(ValueError):
    """A session with this id is already in the store."""


@attrs.frozen
class SessionInfo:
    session_id: str
    created_at: float = attrs.field(factory=time.time)
    #: For a fork: the session it was cut from and how many messages it took.
    parent_session_id: str | None = None
    seed_length: int = 0


class Store(Protocol):
    """A place for many sessions' journals.

    ``append`` is atomic with respect to cancellation: it either raises before
    anything is written or writes everything. It may buffer; ``sync`` returns
    once every record appended so far is durable.
    """

    async def create_session(self, info: SessionInfo, records: Sequence[Record] = ()) -> None: ...

    async def load_session(self, session_id: str) -> tuple[SessionInfo, list[Record]]: ...

    async def append(self, session_id: str, records: Sequence[Record]) -> None: ...

    async def sync(self, session_id: str) -> None: ...

    async def list_sessions(self) -> list[SessionInfo]: ...


class MemoryStore:
    """Keeps journals in memory: for tests and for agents that need no
    durability. Sharing one instance between runtimes restores sessions."""

    def __init__(self) -> None:
        self._sessions: dict[str, tuple[SessionInfo, list[Record]]] = {}

    async def create_session(self, info: SessionInfo, records: Sequence[Record] = ()) -> None:
        if info.session_id in self._sessions:
            raise SessionExists(f"session {info.session_id!r} already exists")
        self._sessions[info.session_id] = (info, list(records))

    async def load_session(self, session_id: str) -> tuple[SessionInfo, list[Record]]:
        try:
            info, records = self._sessions[session_id]
        except KeyError:
            raise SessionNotFound(session_id) from None
        return info, list(records)

    async def append(self, session_id: str, records: Sequence[Record]) -> None:
        self._sessions[session_id][1].extend(records)

    async def sync(self, session_id: str) -> None:
        pass

    async def list_sessions(self) -> list[SessionInfo]:
        return [info for info, _ in self._sessions.values()]
