"""Where journals live: the ``Store`` interface and the in-memory store."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, Self

import attrs

from .projection import SessionState
from .records import MessageAppended, Record


class Named(Protocol):
    """What ``submit`` reads of an ``AgentSpec``: its name."""

    @property
    def name(self) -> str: ...


class SessionNotFound(LookupError):
    """The store holds no session with this id (and nothing is wrong)."""


class SessionExists(ValueError):
    """A session with this id is already in the store."""


class StoreError(Exception):
    """The store cannot be read or written. Never a reason to start a fresh
    session: only ``SessionNotFound`` is."""


class StoreUnavailable(StoreError):
    """The database cannot be reached just now: a lost connection, a server
    restarting, a statement that timed out. The store retries by itself
    (``failed``, then ``recovered``)."""


class StoreNotFound(StoreError):
    """There is no store at this place, and it was not to be created."""


class StoreCorrupt(StoreError):
    """The store's file is damaged, or is not a database at all."""


class SessionHeld(StoreError):
    """Another writer has claimed the session (``Store.claim_session``): a
    session has one writer at a time."""


class ForeignDatabase(StoreError):
    """The database belongs to something else."""


class SchemaTooNew(StoreError):
    """The store was written by a newer version of agentrio."""


#: The longest session id (or agent name) a store takes, in bytes of UTF-8.
MAX_ID_BYTES = 256


def check_id(value: str, what: str = "session id") -> str:
    """``value`` if it may name a session (``what``: or an agent): a
    non-empty string of valid Unicode (no lone surrogate), at most
    ``MAX_ID_BYTES`` bytes of UTF-8, without control characters (NUL,
    newlines). Else ``ValueError`` saying which rule it breaks."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"a {what} must be a non-empty string, got {value!r}")
    shown = repr(value[:40]) + ("..." if len(value) > 40 else "")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"{what} {shown} is not valid Unicode (it holds a lone surrogate)") from None
    if size > MAX_ID_BYTES:
        raise ValueError(f"{what} {shown} is {size} bytes long: at most {MAX_ID_BYTES} bytes of UTF-8")
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise ValueError(f"{what} {shown} holds a control character (NUL, a newline...): not allowed")
    return value


def check_info(info: SessionInfo) -> None:
    """The ids of a session about to be created."""
    check_id(info.session_id)
    if info.agent_name is not None:
        check_id(info.agent_name, "agent name")


@attrs.frozen
class SessionInfo:
    """What a store keeps about a session beside its journal. Set when the
    session is created and never changed: a restore keeps them."""

    session_id: str
    created_at: float = attrs.field(factory=time.time)
    #: For a fork: the session it was cut from and how many messages it took.
    parent_session_id: str | None = None
    seed_length: int = 0
    #: The name of the agent spec the session was created for (None: not
    #: known, as for sessions stored before it was kept).
    agent_name: str | None = None
    #: For a child agent's session: the session of the agent that created it.
    spawned_by: str | None = None


@attrs.frozen
class SessionSummary:
    """A line of a session listing."""

    info: SessionInfo
    #: Messages appended to the journal (those of an unfinished step included).
    messages: int
    #: When the journal last changed.
    updated_at: float


@attrs.define
class LoadedSession:
    """A session as a store restores it: its state, projected from the
    latest snapshot and the records after it."""

    info: SessionInfo
    state: SessionState
    #: Records since the latest snapshot (all of them when there is none).
    unsnapshotted: int


class Claims:
    """Which sessions are claimed for writing, each by one holder (a store
    object). Bookkeeping in this process only, for stores to build
    ``claim_session`` on; it never waits."""

    def __init__(self) -> None:
        self._holders: dict[str, object] = {}

    def claim(self, session_id: str, holder: object) -> None:
        """Raises ``SessionHeld`` if the session is claimed, by anyone."""
        if session_id in self._holders:
            by = "this store" if self._holders[session_id] is holder else f"{self._holders[session_id]!r}"
            raise SessionHeld(
                f"session {session_id!r} is already claimed by a writer of {by}: a session has one "
                "writer at a time; use the agent that has it open, or close it first"
            )
        self._holders[session_id] = holder

    def release(self, session_id: str, holder: object) -> None:
        """Idempotent; a claim of another holder is left alone."""
        if self._holders.get(session_id) is holder:
            del self._holders[session_id]

    def release_all(self, holder: object) -> None:
        for session_id in [s for s, h in self._holders.items() if h is holder]:
            del self._holders[session_id]

    def __bool__(self) -> bool:
        return bool(self._holders)


class Store(Protocol):
    """A place for many sessions' journals.

    ``async with store`` opens it for the block (a store already open stays
    open, and only the block that opened it closes it); a ``Runtime`` does
    this for the store it is given.

    ``append`` never waits (no checkpoint): it writes or buffers the records
    and returns, or raises having taken none of them; so a cancel cannot
    interrupt it, and the journal's memory never disagrees with its store.
    ``sync`` is where waiting happens: it returns once every record appended
    so far is durable. ``save_snapshot`` (which never waits either) offers
    the state projected from every record appended so far, so that
    ``load_state`` need not replay them; the store may ignore it, and must
    take what it keeps at once, since ``state`` goes on changing.

    Damage is never a new session nor a changed history. ``SessionNotFound``
    means only that the session was never created: a session whose own row
    is gone while its records remain, or a store whose file lost its
    contents, is ``StoreCorrupt``. A store that keeps records outside this
    process stores with each one ``checksum.record_checksum`` of the exact
    bytes it keeps (and ``snapshot_checksum`` with each snapshot), and
    checks it on every read: a mismatch raises ``StoreCorrupt`` naming the
    session and the record (``"session 's1': record 7 is damaged"``).
    """

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None: ...

    async def create_session(self, info: SessionInfo, records: Sequence[Record] = ()) -> None: ...

    async def load_session(self, session_id: str) -> tuple[SessionInfo, list[Record]]:
        """The session's whole journal."""
        ...

    async def load_state(self, session_id: str) -> LoadedSession: ...

    async def append(self, session_id: str, records: Sequence[Record]) -> None: ...

    async def save_snapshot(self, session_id: str, state: SessionState) -> None: ...

    async def sync(self, session_id: str) -> None: ...

    async def list_sessions(self) -> list[SessionInfo]: ...

    async def list_summaries(self) -> list[SessionSummary]: ...

    async def claim_session(self, session_id: str) -> None:
        """Make the caller the session's one writer, until ``release_session``
        or the store's closing; raises ``SessionHeld`` at once if another
        writer has claimed it, through this store object or (where the store
        can tell) another. The session need not exist yet: restore-or-create
        claims it first, then loads or creates it, then repairs it. Claiming
        guards writers that claim; ``append`` does not check claims."""
        ...

    async def release_session(self, session_id: str) -> None:
        """End this store's claim of the session (nothing if it has none).
        It must work in a cancelled scope: teardown releases."""
        ...

    async def delete_session(self, session_id: str) -> None:
        """Remove the session and its journal (``SessionNotFound`` if there
        is none). Forks of it keep their own copies and are not touched;
        child agents' sessions it spawned are not touched either, and keep
        its id in ``spawned_by``."""
        ...


class MemoryStore:
    """Keeps journals in memory: for tests and for agents that need no
    durability. Sharing one instance between runtimes restores sessions.
    It always restores by replaying the whole journal."""

    def __init__(self) -> None:
        self._sessions: dict[str, tuple[SessionInfo, list[Record]]] = {}
        self._updated_at: dict[str, float] = {}
        self._claims = Claims()
        self._open_blocks = 0

    def __repr__(self) -> str:
        return f"<MemoryStore at {id(self):#x}>"

    async def __aenter__(self) -> Self:
        self._open_blocks += 1
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        # Claims end when the last block using the store ends.
        self._open_blocks -= 1
        if self._open_blocks <= 0:
            self._open_blocks = 0
            self._claims.release_all(self)

    async def create_session(self, info: SessionInfo, records: Sequence[Record] = ()) -> None:
        if info.session_id in self._sessions:
            raise SessionExists(f"session {info.session_id!r} already exists")
        self._sessions[info.session_id] = (info, list(records))
        self._updated_at[info.session_id] = info.created_at

    async def load_session(self, session_id: str) -> tuple[SessionInfo, list[Record]]:
        try:
            info, records = self._sessions[session_id]
        except KeyError:
            raise SessionNotFound(session_id) from None
        return info, list(records)

    async def load_state(self, session_id: str) -> LoadedSession:
        info, records = await self.load_session(session_id)
        return LoadedSession(info, SessionState.replay(records), len(records))

    async def append(self, session_id: str, records: Sequence[Record]) -> None:
        self._sessions[session_id][1].extend(records)
        self._updated_at[session_id] = time.time()

    async def save_snapshot(self, session_id: str, state: SessionState) -> None:
        pass

    async def sync(self, session_id: str) -> None:
        pass

    async def claim_session(self, session_id: str) -> None:
        self._claims.claim(session_id, self)

    async def release_session(self, session_id: str) -> None:
        self._claims.release(session_id, self)

    async def list_sessions(self) -> list[SessionInfo]:
        return [info for info, _ in self._sessions.values()]

    async def list_summaries(self) -> list[SessionSummary]:
        return [
            SessionSummary(
                info,
                sum(isinstance(r, MessageAppended) for r in records),
                self._updated_at[info.session_id],
            )
            for info, records in self._sessions.values()
        ]

    async def delete_session(self, session_id: str) -> None:
        if self._sessions.pop(session_id, None) is None:
            raise SessionNotFound(session_id)
        del self._updated_at[session_id]
