"""Sessions that another process holds, served from their journal: any
gateway on a store that hosts share (``PostgresStore``) serves any session.

A client that loads a session held elsewhere gets a ``RemoteSession``: its
history, then the holder's new records as they are committed, as ACP
``session/update`` notifications (``JournalView``), read with the store's
``next_records`` (woken by the commits' notifications, never polling). A
prompt is posted to the holder through the database (``post_input``:
durable, taken in exactly once, across takeovers too), and answered when
the turn that took it in ends, as the journal says (``Outcomes``, as
``store.outcome`` reads it). A cancel is posted the same way, and the holder
cancels as for its own clients.

**When the holder dies.** While a prompt of a remote session waits for its
answer, the gateway waits for the holder's lease to end (``acquire(...,
wait=True)``: a holder that lives renews it, one that died or let the
session go does not). Once it has ended and no other process took the
session (a fleet worker may have: then streaming goes on from the journal
as before), this gateway takes the session over as one of its own:
restored with crash repair, the turn the holder's death cut short continued
so that its input gets a real answer, then the posted prompts. The clients
already attached go on following the journal; those that load it next get
the local session. A session that nobody prompts is not taken over: a
client's next prompt does it.

What a remote client does not get: replies streamed token by token (it
sees each message once committed), the updates of child agents, permission
requests (offered to the holder's own clients: a tool that asks waits for
them), its own files through ACP, and MCP servers of its own (the holder's
tools are the session's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from ...actors import AgentDisposed
from ...journal import JournalCorrupt, Lease, RemoteInput, SessionNotFound, StoreError
from ...journal.outcomes import Outcome, Outcomes
from ...journal.records import Record
from ...journal.remote import RemoteKind, inbox_id
from ...messages import UserMessage
from .journal_view import JournalView
from .jsonrpc import BUSY, INTERNAL_ERROR, INVALID_PARAMS, Peer, RpcError
from .sessions import MAX_PROMPTS, RESOURCE_NOT_FOUND, Content, Session, SessionHub
from .updates import acp_stop_reason

log = logging.getLogger("agentrio.gateway")

#: Records read at once: what waits for one client is at most this many
#: records' updates, and the next are read once the client has taken them.
PAGE = 256

#: Seconds between two waits for a holder's lease that the store refused.
RETRY_PAUSE = 1.0


class RemoteStore(Protocol):
    """What a store must do for its sessions to be served from any host."""

    async def post_input(self, session_id: str, item: RemoteInput) -> RemoteInput: ...

    async def read_records(
        self, session_id: str, after: int = 0, *, limit: int | None = None
    ) -> list[tuple[int, Record]]: ...

    async def next_records(
        self, session_id: str, after: int, *, limit: int | None = None
    ) -> list[tuple[int, Record]]: ...

    async def acquire(self, session_id: str, *, wait: bool = False) -> Lease: ...

    async def release(self, session_id: str) -> None: ...

    async def until_usable(self) -> None: ...


def remote_sessions(hub: SessionHub) -> RemoteSessions | None:
    """The hub's remote mode, if its store can carry it."""
    store = hub.runtime.store
    needs = ("post_input", "read_records", "next_records", "acquire", "release", "until_usable")
    if not all(callable(getattr(store, name, None)) for name in needs):
        return None
    return RemoteSessions(hub, store)  # type: ignore[arg-type]


class RemoteSessions:
    """The sessions of one hub that other processes hold, one
    ``RemoteSession`` per session while a client follows it."""

    def __init__(self, hub: SessionHub, store: RemoteStore) -> None:
        self.hub = hub
        self.store = store
        self.sessions: dict[str, RemoteSession] = {}

    def open(self, session_id: str, cwd: Path) -> RemoteSession:
        """The session ``session_id`` as followed from its journal."""
        if (session := self.sessions.get(session_id)) is None:
            session = self.sessions[session_id] = RemoteSession(self, session_id, cwd)
        return session

    def forget(self, session: RemoteSession) -> None:
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]


@attrs.define(eq=False)
class _Waiter:
    """A prompt waiting for the turn that answers it."""

    message: UserMessage
    input_id: str | None = None
    done: trio.Event = attrs.field(factory=trio.Event)
    outcome: Outcome | None = None
    error: RpcError | None = None


class RemoteSession:
    """A session another process holds, for the clients of this gateway that
    follow it: each attached client has its own view of the journal
    (``_Watch``), read at its own pace, so that a client that reads slowly
    holds back no one, and what waits for it is bounded (``PAGE``).

    Every client sees the records in the order they were committed: nothing
    missing, nothing twice, the history it was shown included. A prompt's
    response comes after every update of the turn that answered it."""

    def __init__(self, sessions: RemoteSessions, session_id: str, cwd: Path) -> None:
        self.id = session_id
        self.cwd = cwd
        self._sessions = sessions
        self._store = sessions.store
        self._watches: dict[Peer, _Watch] = {}
        #: Prompts waiting for their answer, and the task that takes the
        #: session over if its holder dies meanwhile.
        self._waiting = 0
        self._keeper: trio.CancelScope | None = None

    @property
    def peers(self) -> list[Peer]:
        return list(self._watches)

    # -- clients ----------------------------------------------------------------

    async def attach(self, peer: Peer, *, replay: bool, files: bool = False, terminals: bool = False) -> None:
        """Follow the session for ``peer``: with ``replay``, its history first
        (as of the last record committed now), then what is committed after
        it. (``files`` and ``terminals`` are not used: the holder's tools
        cannot reach this client's files or terminals.)"""
        if (former := self._watches.pop(peer, None)) is not None:
            former.stop()
        watch = _Watch(self.id, self._store, peer, JournalView(self.cwd))
        self._watches[peer] = watch
        try:
            await self._sessions.hub.nursery.start(watch.run, replay)
        except BaseException:
            self.detach(peer)
            raise

    def detach(self, peer: Peer) -> None:
        if (watch := self._watches.pop(peer, None)) is not None:
            watch.stop()
        if not self._watches and not self._waiting:
            self._sessions.forget(self)

    def _watch(self, peer: Peer | None) -> _Watch:
        if peer is None or (watch := self._watches.get(peer)) is None:
            raise RpcError(INVALID_PARAMS, f"session {self.id!r} is not loaded on this connection")
        return watch

    # -- input ------------------------------------------------------------------

    async def prompt(self, text: Content, origin: Peer | None) -> str:
        """Post ``text`` to the holder as a follow-up; the ACP stop reason of
        the turn that answered it (an error stop raised as ``RpcError``).
        Once posted, the prompt runs even if its client goes away."""
        watch = self._watch(origin)
        if watch.failed is not None:
            raise watch.failed
        if len(watch.waiters) >= MAX_PROMPTS:
            raise RpcError(BUSY, f"the session already holds {MAX_PROMPTS} prompts; wait for one to end")
        waiter = _Waiter(_user_message(text))
        watch.expect(waiter)
        try:
            waiter.input_id = await self._post("followup", waiter.message)
            watch.settle()  # (its answer may have been read already)
            with self._kept_answered():
                await waiter.done.wait()
        finally:
            watch.forget(waiter)
        if waiter.error is not None:
            raise waiter.error
        assert waiter.outcome is not None
        return acp_stop_reason(waiter.outcome.stop_reason, waiter.outcome.error)

    async def steer(self, text: Content, origin: Peer | None) -> str:
        return await self._post_own("steer", text, origin)

    async def followup(self, text: Content, origin: Peer | None) -> str:
        return await self._post_own("followup", text, origin)

    async def _post_own(self, kind: RemoteKind, text: Content, origin: Peer | None) -> str:
        watch = self._watch(origin)
        message = _user_message(text)
        watch.view.own.append(message)
        try:
            return await self._post(kind, message)
        except BaseException:
            watch.view.own.remove(message)
            raise

    async def cancel(self) -> None:
        """Posted to the holder, which cancels the running turn and discards
        the queued prompts, as for its own clients."""
        await self._post("cancel", None)

    async def _post(self, kind: RemoteKind, message: UserMessage | None) -> str:
        try:
            posted = await self._store.post_input(self.id, RemoteInput(kind, message))
        except SessionNotFound:
            raise RpcError(RESOURCE_NOT_FOUND, f"no session {self.id!r}") from None
        except StoreError as exc:
            raise RpcError(INTERNAL_ERROR, f"could not post to session {self.id!r}: {exc}") from None
        return inbox_id(posted.id)

    # -- when the holder dies -----------------------------------------------------

    @contextmanager
    def _kept_answered(self) -> Iterator[None]:
        """While a prompt waits: take the session over if its holder dies."""
        self._waiting += 1
        if self._keeper is None:
            self._keeper = trio.CancelScope()
            self._sessions.hub.nursery.start_soon(self._take_over_when_free, self._keeper)
        try:
            yield
        finally:
            self._waiting -= 1
            if not self._waiting and self._keeper is not None:
                self._keeper.cancel()
                self._keeper = None
            if not self._watches and not self._waiting:
                self._sessions.forget(self)

    async def _take_over_when_free(self, scope: trio.CancelScope) -> None:
        """Once the holder's lease has ended (it died, or let the session go)
        and no other process took it, restore the session here with crash
        repair and run it: the turn cut short is continued, the posted
        prompts are taken in. The waiting prompts are answered from the
        journal as before, whoever answers them."""
        with scope:
            if self.id in self._sessions.hub.sessions:
                return  # it runs here: it takes the posted prompts in itself
            while True:
                try:
                    await self._store.acquire(self.id, wait=True)
                    break
                except SessionNotFound:
                    return
                except StoreError as exc:  # (SessionHeld cannot be: it waits)
                    log.info(
                        "session %s: waiting for its holder's lease until the store is back: %s", self.id, exc
                    )
                    await self._store.until_usable()
                    await trio.sleep(RETRY_PAUSE)
            # Held by this store now: the takeover goes to its end, even if
            # the prompts it is for were answered meanwhile.
            with trio.CancelScope(shield=True):
                await self._take_over()

    async def _take_over(self) -> None:
        hub = self._sessions.hub
        log.info("session %s: its holder is gone; running it here", self.id)
        session: Session | RemoteSession | None = None
        before = hub.sessions.get(self.id)
        try:
            session = await hub.load(self.id, self.cwd)
            if isinstance(session, Session) and session is not before:
                records = await self._store.read_records(self.id)
                outcomes = Outcomes()
                outcomes.feed([record for _, record in records])
                session.resume_pending = False
                await session.agent.resume(continue_turn=outcomes.unfinished)
        except (RpcError, StoreError, JournalCorrupt, AgentDisposed) as exc:
            log.warning("session %s: its holder is gone, and it cannot run here: %s", self.id, exc)
            self._fail(RpcError(INTERNAL_ERROR, f"session {self.id!r} lost its holder: {exc}"))
        finally:
            if session is None or isinstance(session, RemoteSession):
                try:  # (a session that runs here keeps its lease)
                    await self._store.release(self.id)
                except StoreError as exc:
                    log.warning("session %s: its lease runs out by itself: %s", self.id, exc)

    def _fail(self, error: RpcError) -> None:
        for watch in self._watches.values():
            watch.fail(error)


class _Watch:
    """One client's view of a remote session: its own cursor in the journal,
    read a page at a time once the client has taken the page before, so
    that the client's reading paces it."""

    def __init__(self, session_id: str, store: RemoteStore, peer: Peer, view: JournalView) -> None:
        self.session_id = session_id
        self.store = store
        self.peer = peer
        self.view = view
        self.waiters: list[_Waiter] = []
        #: Why the journal is no longer followed for this client (None: it is).
        self.failed: RpcError | None = None
        self._scope = trio.CancelScope()

    def stop(self) -> None:
        self._scope.cancel()

    async def run(
        self, replay: bool, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Read the journal as it is now and queue what it shows (``replay``)
        or only the status; started then, and follows it until stopped. An
        error that is not an outage of the store (the session deleted, a
        damaged record) ends the following, and the prompts waiting with it."""
        with self._scope:
            try:
                while len(page := await self.store.read_records(self.session_id, self.view.seq, limit=PAGE)):
                    self.view.feed(page)
                    if len(page) < PAGE:
                        break
            except SessionNotFound:
                raise RpcError(RESOURCE_NOT_FOUND, f"no session {self.session_id!r}") from None
            except (StoreError, JournalCorrupt) as exc:
                raise RpcError(INTERNAL_ERROR, f"cannot read session {self.session_id!r}: {exc}") from None
            shown = self.view.replay() if replay else iter([self.view.status()])
            self.peer.send_stream(_notifications(self.session_id, shown))
            task_status.started()
            try:
                await self._follow()
            except (StoreError, SessionNotFound, JournalCorrupt) as exc:
                log.warning("session %s: no longer followed for a client: %s", self.session_id, exc)
                self.failed = RpcError(
                    INTERNAL_ERROR, f"session {self.session_id!r} cannot be followed (load it again): {exc}"
                )
                self.fail(self.failed)

    async def _follow(self) -> None:
        while True:
            page = await self.store.next_records(self.session_id, self.view.seq, limit=PAGE)
            updates = self.view.feed(page)
            taken = trio.Event()
            if updates:
                self.peer.send_stream(_notifications(self.session_id, updates, taken.set))
            else:
                taken.set()
            self.settle()  # responses are queued after the updates of their turn
            await taken.wait()

    # -- prompts ----------------------------------------------------------------

    def expect(self, waiter: _Waiter) -> None:
        self.waiters.append(waiter)
        self.view.own.append(waiter.message)

    def forget(self, waiter: _Waiter) -> None:
        self.waiters.remove(waiter)
        # Never taken in (not posted, withdrawn): no turn will echo it.
        unseen = waiter.outcome is None or waiter.outcome.error is not None
        if unseen and waiter.message in self.view.own:
            self.view.own.remove(waiter.message)

    def settle(self) -> None:
        """Answer the waiting prompts whose answering turn the view has read."""
        answered = self.view.outcomes.answered
        for waiter in self.waiters:
            if waiter.input_id is not None and (outcome := answered.get(waiter.input_id)) is not None:
                waiter.outcome = outcome
                waiter.done.set()

    def fail(self, error: RpcError) -> None:
        for waiter in self.waiters:
            if not waiter.done.is_set():
                waiter.error = error
                waiter.done.set()


def _user_message(content: Content) -> UserMessage:
    return UserMessage(content if isinstance(content, str) else [*content])


def _notifications(
    session_id: str, updates: Iterable[dict[str, Any]], then: Callable[[], None] | None = None
) -> Iterator[dict[str, Any]]:
    """``updates`` as notifications, made as the client takes them; ``then``
    is called once the last is taken."""
    for update in updates:
        yield {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": update},
        }
    if then is not None:
        then()
