"""The Runtime: the root of every agent's supervision tree."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Any, Self

import trio

from .._errors import sole_error
from .._ids import new_id
from ..actors.agent import Agent, AgentDisposed, Setup, dispose_in_order
from ..actors.scope import AgentScope
from ..actors.spec import AgentSpec, RunResult
from ..events import AgentCreated, AgentEnded
from ..journal import (
    Journal,
    LoadedSession,
    MemoryStore,
    SessionExists,
    SessionHeld,
    SessionInfo,
    SessionNotFound,
    SessionState,
    Store,
)
from ..journal.fork import fork_session
from ..models.http import open_http_client
from ..models.prices import BUILTIN_PRICES, Price, Prices
from .fleet import STOP_GRACE, Fleet, Specs
from .lifecycle import RuntimeSubscription
from .registry import AgentRegistry
from .remote import RemoteStore, serve_remote, stop_on_lost_lease, takes_remote_input

log = logging.getLogger(__name__)

#: Seconds an idle agent stays awake, by default, before it hibernates: long
#: enough that a conversation's turns in quick succession never pay a
#: wake-up, short enough that an agent waiting for a person gives its task
#: and mailbox up.
HIBERNATE_AFTER = 1.0


class Runtime:
    """``async with Runtime(store) as rt``: owns the root nursery in which
    every agent runs, and the HTTP client their models share. Leaving the
    block disposes every agent, newest first (cancel, wait, close; idle
    agents together, see ``dispose_in_order``), then waits for anything
    they still supervise. The store is opened for the block (unless it
    already is) and closed last. An error raised in the block leaves it as
    raised, not in an exception group.

    ``hibernate_after`` (seconds, default ``HIBERNATE_AFTER``): an agent
    idle that long hibernates, giving up its task and mailbox until it is
    used again (see ``Agent``: waking is transparent); a new agent with
    nothing to repair and no ``setup`` is created hibernating. ``0``:
    hibernate as soon as idle; ``None``: never (every agent keeps its task
    for life). An agent with a ``setup`` scope never hibernates, and so
    neither does one whose session a store leases (``PostgresStore``, and
    every session ``serve`` runs): its scope keeps the lease and takes the
    input posted from anywhere. Leaving the block disposes hibernating
    agents without waking them."""

    def __init__(
        self,
        store: Store | None = None,
        *,
        resume: bool = False,
        prices: Mapping[str, Price] | None = None,
        hibernate_after: float | None = HIBERNATE_AFTER,
    ) -> None:
        if hibernate_after is not None and not (
            isinstance(hibernate_after, int | float) and hibernate_after >= 0
        ):
            raise ValueError(f"hibernate_after must be seconds (>= 0) or None, got {hibernate_after!r}")
        self.store: Store = store if store is not None else MemoryStore()
        #: What its agents' usage is costed at: ``prices`` over the built-in
        #: table (a spec's own ``prices`` go over these).
        self.prices: Prices = BUILTIN_PRICES.merged(prices)
        #: Restored agents start their pending input at once (else they wait
        #: for ``agent.resume()`` or new input).
        self.resume = resume
        #: Seconds an idle agent stays awake before it hibernates (None: never).
        self.hibernate_after = hibernate_after
        self._opening: set[str] = set()
        self.registry = AgentRegistry()
        self._nursery: trio.Nursery | None = None
        self._stack: AsyncExitStack | None = None
        #: The task that stops the agents' work if the store fails.
        self._watching = trio.CancelScope()

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise RuntimeError("a Runtime can be entered only once")
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self.store)
            await stack.enter_async_context(open_http_client())
            self._nursery = await stack.enter_async_context(trio.open_nursery())
            if isinstance(getattr(self.store, "failed", None), trio.Event):
                self._nursery.start_soon(self._stop_on_store_failure)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        errors: list[Exception] = []
        try:
            # An orderly teardown even when the host is being cancelled: it
            # is bounded, and skipping it would leave journals open.
            with trio.CancelScope(shield=True):
                while self.registry:
                    errors += await dispose_in_order(reversed(self.registry.agents))
        finally:
            self._watching.cancel()
            self.registry.events.close()
            self._nursery = None
            try:
                assert self._stack is not None  # (entered)
                suppress = await self._stack.__aexit__(exc_type, exc, tb)
            except BaseExceptionGroup as group:
                # The root nursery wraps the block's own error in a group: let
                # it leave the block as it was raised (`except SessionHeld`).
                if not isinstance(exc, Exception) or sole_error(group) is not exc:
                    raise
                suppress = False
        if errors:
            raise ExceptionGroup("tearing down the runtime failed", errors)
        return suppress

    async def _stop_on_store_failure(self) -> None:
        """Once a write of the store has failed, nothing more is journaled:
        every live agent's work is cancelled at once (cause
        ``store_failed``), so that no tool goes on acting unrecorded; its
        tools' processes are stopped, its run ends ``error`` naming the
        store, and it emits ``store_failed``. Its queued input stays queued,
        and it starts nothing until the store has recovered (the store
        retries with backoff); then it emits ``store_recovered`` and takes
        its queued input. (A store with a ``failed`` event, recovering
        with ``until_usable``: ``SQLiteStore``, ``PostgresStore``.)"""
        store = self.store
        with self._watching:
            while True:
                failed = getattr(store, "failed", None)  # (a new event after each recovery)
                assert isinstance(failed, trio.Event)  # (watched only then)
                await failed.wait()
                error = f"{store!r} failed: {getattr(store, 'failure', None) or 'a write was refused'}"
                for agent in reversed(self.registry.agents):  # children first
                    agent._tell_store(error)
                    try:
                        await agent.cancel("store_failed", keep_inbox=True)
                    except Exception:
                        log.exception(
                            "agent %s: its work could not be stopped after the store failed", agent.id
                        )
                until_usable = getattr(store, "until_usable", None)
                if until_usable is None:
                    return  # a store that does not recover
                await until_usable()
                for agent in self.registry.agents:
                    agent._tell_store(None)
                    try:
                        await agent.resume()
                    except AgentDisposed:
                        pass

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[RuntimeSubscription]:
        """``async with rt.subscribe() as events: async for event in events``:
        the runtime's lifecycle events from now on (``agent_created`` once an
        agent is published, ``agent_ended`` once it left the registry,
        ``agent_failed``, ``agent_restarted``), each with ``agent_id``,
        ``name``, ``parent_id`` and ``session_id``. Bounded: see
        ``RuntimeSubscription``. Iteration ends when the Runtime closes."""
        async with self.registry.events.subscribe() as events:
            yield events

    @property
    def nursery(self) -> trio.Nursery:
        if self._nursery is None:
            raise RuntimeError("the Runtime is not running: use `async with Runtime() as rt`")
        return self._nursery

    async def create(
        self,
        spec: AgentSpec,
        session_id: str | None = None,
        parent: Agent | None = None,
        *,
        setup: Setup | None = None,
        wait: bool = False,
    ) -> Agent:
        """Start an agent. With a ``session_id`` the store holds, the agent is
        restored from it (an interrupted run is repaired); otherwise a new
        session with that id (or a fresh one) is created, recording the
        spec's name and ``parent``'s session (``SessionInfo.agent_name``,
        ``spawned_by``). A restored session keeps what it recorded.

        ``setup(agent, scope)`` runs in the agent's own task before the agent
        is published: what it enters in ``scope`` lives as long as the agent.
        It may return a commit callback, a synchronous final re-check run as
        the last thing before publishing. If either fails, the agent is
        unregistered, everything setup opened is closed, and the error is
        raised here.

        A session that another runtime holds is refused with ``SessionHeld``
        naming the holder; with ``wait=True`` this waits until the holder
        lets it go (or, for a store that leases sessions across hosts, its
        lease runs out) and takes it over then. So do runtimes racing to
        create a new id: one creates it, the others get ``SessionHeld``, or
        with ``wait=True`` wait and then open it."""
        nursery = self.nursery
        # A fresh id names no stored session: there is nothing to load.
        stored = bool(session_id)
        session_id = session_id or new_id("session")
        if session_id in self.registry or session_id in self._opening:
            raise ValueError(f"session {session_id!r} is already open in this runtime")
        # Claimed before the first await: two concurrent opens of one stored
        # session cannot both load (and repair) it.
        self._opening.add(session_id)
        try:
            # One writer per session: another runtime on this store (in this
            # process; across hosts, the store's lease) is refused at once.
            await self._claim(session_id, wait)
            loaded = await self._open(session_id, wait) if stored else None
            if loaded is None:
                info = SessionInfo(
                    session_id, agent_name=spec.name, spawned_by=parent.session_id if parent else None
                )
                try:
                    await self.store.create_session(info)
                    loaded = LoadedSession(info, SessionState(), 0)
                except SessionExists:
                    # Another runtime created it meanwhile: it holds it now
                    # (``SessionHeld`` naming it), or it is waited for.
                    loaded = await self._open(session_id, wait)
                    if loaded is None:
                        raise
            agent = await self._start(spec, loaded, parent, nursery, setup)
        except BaseException:
            with trio.CancelScope(shield=True):
                await self.store.release_session(session_id)
            raise
        finally:
            self._opening.discard(session_id)
        if self.resume:
            await agent.resume()
        return agent

    async def _claim(self, session_id: str, wait: bool) -> None:
        """Claim the session, or with ``wait`` (and a store that claims
        without leases) wait until its writer lets it go."""
        delay = 0.05
        while True:
            try:
                await self.store.claim_session(session_id)
                return
            except SessionHeld:
                if not wait or hasattr(self.store, "acquire"):
                    raise
            await trio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _open(self, session_id: str, wait: bool) -> LoadedSession | None:
        """The stored session (None if there is none), its lease taken,
        waited for with ``wait`` (a store that leases sessions)."""
        acquire = getattr(self.store, "acquire", None)
        if wait and acquire is not None:
            try:
                await acquire(session_id, wait=True)
            except SessionNotFound:
                return None  # created by the caller, with its lease
        return await self._load(session_id)

    async def _load(self, session_id: str) -> LoadedSession | None:
        """The stored session, or None when the store has none by that id
        (only a missing session starts afresh: a damaged or foreign store
        raises a StoreError instead)."""
        try:
            return await self.store.load_state(session_id)
        except SessionNotFound:
            return None

    async def fork(
        self,
        session_id: str,
        at_message: int | None = None,
        spec: AgentSpec | None = None,
        *,
        at_turn: int | None = None,
        repair: bool = False,
    ) -> Agent:
        """A new agent on a new session whose history is a copy of the first
        ``at_message`` committed messages of session ``session_id``, or of its
        history at the end of turn ``at_turn``. The cut must leave every tool
        call answered and must not fall inside a turn that is still open
        (``ForkRefused``), unless ``repair``: an open turn is then closed in
        the copy as crash repair would close it. The new session records its
        parent, how many messages it took and the name of ``spec``, which
        defaults to the live source agent's."""
        source = self.registry.get(session_id)
        spec = spec or (source.spec if source is not None else None)
        if spec is None:
            raise ValueError(f"session {session_id!r} is not live here: pass the spec to fork it with")
        loaded = await fork_session(
            self.store,
            session_id,
            at_message=at_message,
            at_turn=at_turn,
            repair=repair,
            agent_name=spec.name,
        )
        await self.store.claim_session(loaded.info.session_id)
        try:
            return await self._start(spec, loaded, None, self.nursery)
        except BaseException:
            with trio.CancelScope(shield=True):
                await self.store.release_session(loaded.info.session_id)
            raise

    async def _start(
        self,
        spec: AgentSpec,
        loaded: LoadedSession,
        parent: Agent | None,
        nursery: trio.Nursery,
        setup: Setup | None = None,
    ) -> Agent:
        journal = Journal(
            self.store, loaded.info.session_id, loaded.state, unsnapshotted=loaded.unsnapshotted
        )
        agent = Agent(self, spec, journal, parent_id=parent.id if parent else None)
        if takes_remote_input(self.store):
            setup = _taking_remote_input(setup, self.store)
        state = loaded.state
        if setup is None and self.hibernate_after is not None and not (state.turn_open or state.step_open):
            # Nothing to set up or repair: created hibernating, its task
            # started by its first use (``Agent``).
            if parent is not None:
                parent._check_hosting()
            self.registry.add(agent)
        else:
            # Registered while setup runs, so that setup sees the tree it joins.
            self.registry.add(agent)
            try:
                if parent is None:
                    await nursery.start(agent.main, setup)
                else:
                    # A child lives in its parent's nursery (the parent woken
                    # for it): the nursery tree is the agent tree, and the
                    # parent's scope reaches it.
                    async with parent._awake_host() as host:
                        await host.start(agent.main, setup)
            except BaseException:
                self.registry.remove(agent)
                raise
        self.registry.events.emit(AgentCreated, agent)
        return agent

    async def dispose(self, agent: Agent) -> None:
        """Tear ``agent`` down; see ``Agent.dispose``."""
        await agent.dispose()

    async def detach(self, *agents: Agent) -> None:
        """Forget disposed agents, in order: out of the registry, their
        sessions no longer claimed (called by ``Agent.dispose``; works when
        cancelled)."""
        with trio.CancelScope(shield=True):
            for agent in agents:
                if self.registry.get(agent.id) is agent:
                    self.registry.remove(agent)
                    self.registry.events.emit(AgentEnded, agent)
                await self.store.release_session(agent.session_id)

    async def serve(
        self,
        specs: Specs,
        *,
        max_sessions: int = 100,
        idle_release: float = 30.0,
        grace: float = STOP_GRACE,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run as a worker of a fleet sharing this runtime's ``PostgresStore``,
        until cancelled (run it in a scope of its own: cancelling the
        Runtime's nursery would abort the turns instead of leaving them to
        be continued). ``specs`` maps spec names to ``AgentSpec`` (or to a
        callable returning one; AgentSpecs alone are keyed by their names).

        It claims sessions of those specs that have input posted
        (``store.submit``, ``post_input``) or were left by a holder that
        died, and that no live lease holds, at most ``max_sessions`` at a
        time and a bounded batch per claim (``FOR UPDATE SKIP LOCKED``: it
        never waits for another worker, and workers share the work). Each
        is restored with crash repair; a turn that a crash (or a worker
        giving it up) cut short is continued, so that its input gets a real
        answer; then its input is taken in, exactly once. A session idle for
        ``idle_release`` seconds is given up for any runtime to take next.
        It wakes on the notification of new input and when the earliest
        lease of another worker runs out, never polling. A session whose
        spec no worker knows stays pending and is logged. Once cancelled,
        it lets running turns end within ``grace`` seconds, cuts the others
        short for the next worker to continue, and gives every session up."""
        fleet = Fleet(self, specs, max_sessions=max_sessions, idle_release=idle_release, grace=grace)
        await fleet.serve(task_status=task_status)


def _taking_remote_input(setup: Setup | None, store: RemoteStore) -> Setup:
    """``setup``, then input posted anywhere is taken in for the agent's
    life (and a lost lease stops it), in the agent's own scope."""

    async def remote_setup(agent: Agent, scope: AgentScope) -> Callable[[], None] | None:
        commit = await setup(agent, scope) if setup is not None else None
        scope.nursery.start_soon(serve_remote, agent, store)
        scope.nursery.start_soon(stop_on_lost_lease, agent, store)
        return commit

    return remote_setup


def run_sync(spec: AgentSpec, prompt: str, *, store: Store | None = None, **options: Any) -> RunResult:
    """Run ``prompt`` on a new agent of ``spec`` from plain (non-trio) code:
    one Runtime, one run, a clean teardown; returns the ``RunResult``.
    ``options`` go to ``Runtime.create`` (``session_id=`` continues a stored
    session)."""

    async def main() -> RunResult:
        async with Runtime(store) as runtime:
            agent = await runtime.create(spec, **options)
            return await agent.run(prompt)

    return trio.run(main)
