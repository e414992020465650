"""``Runtime.serve``: a runtime as one worker of a fleet that shares a
``PostgresStore``. It claims the sessions that have work, runs them, and
gives them up when idle, so that sessions outlive the host that ran them."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, cast

import trio

from ..actors.agent import Agent
from ..actors.spec import AgentSpec
from ..events import Status
from ..journal import Store, StoreError
from ..journal.outcomes import RELEASED, Outcomes

if TYPE_CHECKING:
    from ..journal.ownership import Lease
    from ..journal.postgres.fleet import Claimed
    from .runtime import Runtime


class SharedStore(Store, Protocol):
    """What a fleet asks of a store that runtimes share (``PostgresStore``)."""

    @property
    def failure(self) -> StoreError | None: ...

    async def until_usable(self) -> None: ...

    async def input_posted(self) -> trio.Event: ...

    async def claim_runnable(self, specs: Sequence[str], limit: int, *, report: int = 10) -> Claimed: ...

    def lease(self, session_id: str) -> Lease | None: ...

    async def release(self, session_id: str) -> None: ...

    async def leave(self, session_id: str, token: int) -> None: ...


log = logging.getLogger(__name__)

#: The most sessions one claim takes: a worker takes a bounded batch, starts
#: it, then claims again, so that workers woken together share the work.
CLAIM_BATCH = 8

#: Seconds a stopping worker lets running turns go on before it cuts them
#: short (cause ``released``: the next worker continues them).
STOP_GRACE = 5.0

#: The shortest wait between two claims woken by lease expiry, in seconds:
#: a lease that ran out but stays unclaimed (another claimer has it locked)
#: never makes a busy loop.
MIN_WAIT = 0.1

#: Seconds between two claims that the store refused.
RETRY_PAUSE = 1.0

#: How many sessions of unknown specs are remembered as reported.
REPORTED_MAX = 10_000

Specs = Mapping[str, AgentSpec | Callable[[], AgentSpec]] | Iterable[AgentSpec]


def spec_table(specs: Specs) -> dict[str, AgentSpec | Callable[[], AgentSpec]]:
    """``specs`` by name: a mapping as given, or specs keyed by their names."""
    if isinstance(specs, Mapping):
        table = dict(specs)
    else:
        table = {}
        for spec in specs:
            if not isinstance(spec, AgentSpec):
                raise TypeError(f"specs: expected a mapping name -> AgentSpec, or AgentSpecs, got {spec!r}")
            table[spec.name] = spec
    if not table:
        raise ValueError("specs: give at least one spec to serve")
    for name, spec in table.items():
        if not (isinstance(spec, AgentSpec) or callable(spec)):
            raise TypeError(
                f"specs[{name!r}]: expected an AgentSpec or a callable returning one, got {spec!r}"
            )
    return table


class Fleet:
    """One runtime's share of the fleet: the sessions it runs and the loop
    that claims more. See ``Runtime.serve`` for the guarantees."""

    def __init__(
        self,
        runtime: Runtime,
        specs: Specs,
        *,
        max_sessions: int,
        idle_release: float,
        grace: float = STOP_GRACE,
        batch: int = CLAIM_BATCH,
    ) -> None:
        store = runtime.store
        if not hasattr(store, "claim_runnable"):
            raise TypeError(f"rt.serve needs a store that runtimes share (PostgresStore), not {store!r}")
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions!r}")
        if not idle_release >= 0:
            raise ValueError(f"idle_release must be a number of seconds, got {idle_release!r}")
        self.runtime = runtime
        self.store = cast("SharedStore", store)  # (it claims: a shared store by its shape)
        self.specs = spec_table(specs)
        self.max_sessions = max_sessions
        self.idle_release = idle_release
        self.grace = grace
        self.batch = batch
        #: The sessions this runtime runs, by id.
        self.running: dict[str, Agent] = {}
        self._freed = trio.Event()
        self._reported: set[str] = set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            # Listening before start returns: input submitted after that
            # wakes the worker.
            await self.store.input_posted()
            task_status.started()
            await self._claim_forever(nursery)

    async def _claim_forever(self, nursery: trio.Nursery) -> None:
        names = list(self.specs)
        while True:
            freed = self._freed = trio.Event()
            free = self.max_sessions - len(self.running)
            try:
                posted = await self.store.input_posted()  # before the claim: no wake-up falls between
                claimed = await self.store.claim_runnable(names, min(free, self.batch))
            except StoreError as exc:
                # The store retries by itself; claims wait for it, then once
                # more after a pause (the listener may have to reconnect).
                log.warning("no sessions claimed until the store recovers: %s", exc)
                await self.store.until_usable()
                await trio.sleep(RETRY_PAUSE)
                continue
            self._report(claimed.unknown)
            for session_id, name, token, _ in claimed.sessions:
                await nursery.start(self._run, session_id, name, token)
            if claimed.sessions and len(claimed.sessions) == self.batch and free > self.batch:
                continue  # more may be waiting
            wait = math.inf
            if claimed.next_expiry is not None and free > len(claimed.sessions):
                wait = max(claimed.next_expiry, MIN_WAIT)
            with trio.move_on_after(wait):
                await _first(posted.wait, freed.wait)

    def _report(self, unknown: list[tuple[str, str | None]]) -> None:
        """A session with work whose spec no name given knows stays pending,
        for a runtime that knows it: said once per session."""
        for session_id, name in unknown:
            if session_id not in self._reported and len(self._reported) < REPORTED_MAX:
                self._reported.add(session_id)
                log.warning(
                    "session %r has input for spec %r, which this runtime does not serve (it serves %s): "
                    "it stays pending for a runtime that does",
                    session_id,
                    name,
                    ", ".join(map(repr, self.specs)),
                )

    async def _run(
        self, session_id: str, name: str, token: int, *, task_status: trio.TaskStatus[None]
    ) -> None:
        """Restore the claimed session (crash repair), continue a turn that was
        cut short, take its input, and give it up once idle for
        ``idle_release`` seconds, or when the serve loop is cancelled."""
        try:
            agent = await self.runtime.create(self._spec(name), session_id)
        except Exception as exc:  # noqa: BLE001 - the session is left for another runtime
            log.error(
                "session %r could not be restored, and is left for another runtime: %s", session_id, exc
            )
            with trio.CancelScope(shield=True):
                await _quietly(self.store.release(session_id))
            task_status.started()
            return
        self.running[session_id] = agent
        task_status.started()
        lease = self.store.lease(session_id)
        assert lease is not None  # (just claimed)
        try:
            outcomes = await self._outcomes(session_id)
            await agent.resume(continue_turn=outcomes.unfinished)
            await _first(lease.lost.wait, functools.partial(self._until_idle_for, agent))
        finally:
            with trio.CancelScope(shield=True):
                await self._give_up(agent, token, lost=lease.error is not None)
            del self.running[session_id]
            self._freed.set()

    def _spec(self, name: str) -> AgentSpec:
        spec = self.specs[name]
        if not isinstance(spec, AgentSpec):
            spec = spec()
            if not isinstance(spec, AgentSpec):
                raise TypeError(f"specs[{name!r}]() returned {spec!r}, not an AgentSpec")
        return spec

    async def _outcomes(self, session_id: str) -> Outcomes:
        outcomes = Outcomes()
        outcomes.feed((await self.store.load_session(session_id))[1])
        return outcomes

    async def _until_idle_for(self, agent: Agent) -> None:
        async with agent.subscribe() as events:
            while True:
                await agent.wait_idle()
                with trio.move_on_after(self.idle_release) as idle:
                    async for event in events:
                        if isinstance(event, Status) and event.status == "running":
                            break
                if idle.cancelled_caught and agent.status == "idle":
                    return

    async def _give_up(self, agent: Agent, token: int, *, lost: bool) -> None:
        """Let running turns end within the grace, cut them short after it
        (cause ``released``), dispose of the agent, and leave the session
        runnable if work is left in it (``PostgresStore.leave``)."""
        session_id = agent.session_id
        try:
            if not lost:
                with trio.move_on_after(self.grace):
                    await agent.wait_idle()
                await agent.cancel(RELEASED, keep_inbox=True)
                await agent.wait_idle()
            await self.runtime.dispose(agent)
            if not lost and self.store.failure is None:
                outcomes = await self._outcomes(session_id)
                if outcomes.unfinished or outcomes.queued:
                    await self.store.leave(session_id, token)
        except Exception as exc:  # noqa: BLE001 - the lease runs out by itself
            log.warning(
                "session %r was not given up cleanly (its lease runs out by itself): %s", session_id, exc
            )


async def _first(*waits: Callable[[], Awaitable[object]]) -> None:
    """Wait until the first of ``waits`` returns; cancel the others."""
    async with trio.open_nursery() as nursery:

        async def race(wait: Callable[[], Awaitable[object]]) -> None:
            await wait()
            nursery.cancel_scope.cancel()

        for wait in waits:
            nursery.start_soon(race, wait)


async def _quietly(awaitable: Awaitable[object]) -> None:
    try:
        await awaitable
    except Exception as exc:  # noqa: BLE001 - a clean-up's failure is logged, not raised
        log.warning("%s", exc)
