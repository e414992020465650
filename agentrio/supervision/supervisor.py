"""Supervisors: restart long-lived children by strategy, give up by intensity.

``async with Supervisor(...) as sup`` owns a nursery. Each child runs there in
its own cancel scope; when it ends on its own, the supervision loop (a task
of the same nursery) consults the child's restart policy and the strategy,
stops the children the strategy takes (newest first), and starts them again
(in start order, each up before the next starts). Past the restart intensity
it escalates: the owner's block is cancelled, every child is stopped, and
``SupervisorEscalation`` is raised from the ``async with``. Inside a child of
another supervisor, that is simply the child failing: supervisors nest.

Leaving the block stops every child, newest first. Nothing started here
outlives the block, and cancelling the owner cancels everything.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self

import attrs
import trio

from .._ids import new_id
from .events import ChildExit, ChildRestart, Escalation, SupervisorEvent
from .policy import (
    RESTART_POLICIES,
    RestartIntensity,
    RestartPolicy,
    Strategy,
    calls_for_restart,
    one_for_one,
)

OnEvent = Callable[[SupervisorEvent], None]


@attrs.frozen
class ChildSpec:
    """A child: ``await start(task_status=...)`` runs it, and it calls
    ``task_status.started(value)`` once it is up (as for ``nursery.start``).
    ``start`` is called again for each restart."""

    id: str
    start: Callable[..., Awaitable[Any]]
    restart: RestartPolicy = attrs.field(
        default="transient", kw_only=True, validator=attrs.validators.in_(RESTART_POLICIES)
    )


class SupervisorEscalation(Exception):
    """A supervisor gave up: ``child_id`` ended once more than the restart
    intensity allows. ``__cause__`` is how it ended last (None for a normal
    return of a ``permanent`` child)."""

    def __init__(self, supervisor: str, child_id: str, error: BaseException | None, event: Escalation):
        self.supervisor = supervisor
        self.child_id = child_id
        self.error = error
        self.event = event
        how = "returned" if error is None else f"failed ({_describe(error)})"
        super().__init__(
            f"supervisor {supervisor!r} gave up: child {child_id!r} {how} after "
            f"{event.max_restarts} restarts within {event.within:g} s"
        )


@attrs.define(eq=False)
class _Run:
    """One run of a child, from its start to its end."""

    spec: ChildSpec
    scope: trio.CancelScope = attrs.Factory(trio.CancelScope)
    ended: trio.Event = attrs.Factory(trio.Event)

    async def stop(self) -> None:
        self.scope.cancel()
        await self.ended.wait()


class _Started:
    """The task status a child's ``start`` gets: it remembers whether the
    child came up, which tells a failed start from a later failure."""

    def __init__(self, task_status: trio.TaskStatus[Any]) -> None:
        self._task_status = task_status
        self.up = False

    def started(self, value: Any = None) -> None:
        self.up = True
        self._task_status.started(value)


class Supervisor:
    """Supervises long-lived children (tool servers, background workers).

    ``strategy`` picks which children a restart takes (``one_for_one``,
    ``one_for_all``, ``rest_for_one``). At most ``max_restarts`` restarts
    within ``within`` seconds of trio's clock; one more escalates.
    ``on_event`` (a plain function; it must neither block nor raise) receives
    each ``ChildRestart``, ``ChildExit`` and ``Escalation`` as it happens.
    """

    def __init__(
        self,
        strategy: Strategy = one_for_one,
        *,
        max_restarts: int = 3,
        within: float = 5.0,
        on_event: OnEvent | None = None,
        name: str | None = None,
    ) -> None:
        self.name = name or new_id("supervisor")
        self._strategy = strategy
        self._intensity = RestartIntensity(max_restarts, within)
        self._on_event = on_event
        self._seq = 0
        #: The current run of each child, in start order.
        self._runs: list[_Run] = []
        self._lock = trio.Lock()  # one change of the children at a time
        #: Runs that ended on their own, waiting for the loop. Each run
        #: reports once, and a child is restarted only after its exit is
        #: handled, so at most one exit per child waits here.
        self._exits: deque[tuple[_Run, Exception | None]] = deque()
        self._exit_arrived = trio.Event()
        self._body = trio.CancelScope()
        self._loop = trio.CancelScope()
        self._escalation: SupervisorEscalation | None = None
        self._state = "new"

    @property
    def children(self) -> tuple[str, ...]:
        """The ids of the children, in start order."""
        return tuple(run.spec.id for run in self._runs)

    async def start_child(self, spec: ChildSpec) -> Any:
        """Start ``spec`` and return once it is up, with the value it passed
        to ``task_status.started``. A child that fails before it is up is not
        kept: its error is raised here."""
        if self._state != "open":
            raise RuntimeError(f"supervisor {self.name!r} is not open")
        async with self._lock:
            if spec.id in self.children:
                raise ValueError(f"supervisor {self.name!r} already has a child {spec.id!r}")
            run = _Run(spec)
            value = await self._nursery.start(self._run, run)
            self._runs.append(run)
            return value

    # -- the block ------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._state != "new":
            raise RuntimeError("a Supervisor can be entered only once")
        self._nursery_manager = trio.open_nursery()
        self._nursery = await self._nursery_manager.__aenter__()
        self._nursery.start_soon(self._supervise)
        # The owner's block runs in a scope of its own, so that an escalation
        # can cancel it, and its exception leaves the block as it was raised
        # (not wrapped in the nursery's exception group).
        self._body.__enter__()
        self._state = "open"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        self._state = "closed"
        try:
            self._body.__exit__(exc_type, exc, tb)
        finally:
            self._loop.cancel()
            # Bounded: stopping is cancelling, and children end when cancelled.
            with trio.CancelScope(shield=True):
                async with self._lock:
                    for run in reversed(self._runs):
                        await run.stop()
            self._report_unhandled_exits()
            await self._nursery_manager.__aexit__(None, None, None)
        if self._escalation is not None:
            raise self._escalation from self._escalation.error
        return False

    # -- supervision ----------------------------------------------------------

    async def _run(self, run: _Run, *, task_status: trio.TaskStatus[Any]) -> None:
        status = _Started(task_status)
        error: Exception | None = None
        try:
            with run.scope:
                await run.spec.start(task_status=status)
        except Exception as exc:
            if not status.up:
                raise  # to whoever is starting it
            error = exc
        finally:
            run.ended.set()
        if not run.scope.cancel_called:
            self._exits.append((run, error))
            self._exit_arrived.set()
        elif error is not None:
            # Stopped by the supervisor, it failed on the way out: nothing to
            # restart for, but not to be lost either.
            self._emit(ChildExit, child_id=run.spec.id, error=_describe(error))

    async def _supervise(self) -> None:
        with self._loop:
            while True:
                if not self._exits:
                    self._exit_arrived = trio.Event()
                    await self._exit_arrived.wait()
                    continue
                run, error = self._exits.popleft()
                async with self._lock:
                    # A run stopped and replaced by a restart meanwhile is stale.
                    if run in self._runs:
                        await self._on_exit(run, error)
                if self._escalation is not None:
                    return

    def _report_unhandled_exits(self) -> None:
        """Children that ended on their own once the supervision loop had
        stopped are not restarted any more, but reported."""
        while self._exits:
            run, error = self._exits.popleft()
            if run in self._runs:
                self._emit(ChildExit, child_id=run.spec.id, error=_describe(error))

    async def _on_exit(self, run: _Run, error: Exception | None) -> None:
        if not calls_for_restart(run.spec.restart, error):
            self._runs.remove(run)
            self._emit(ChildExit, child_id=run.spec.id, error=_describe(error))
            return
        ended: _Run | None = run
        while ended is not None:
            if not self._intensity.admit(trio.current_time()):
                self._escalate(ended, error)
                return
            # A child that fails to come up again has ended once more.
            ended, error = await self._restart(ended, error)

    async def _restart(self, ended: _Run, error: Exception | None) -> tuple[_Run | None, Exception | None]:
        """Restart what the strategy takes for ``ended``. Returns the run of a
        child that failed to come up again, with its error, or (None, None)."""
        taken = [self._runs[i] for i in self._strategy(len(self._runs), self._runs.index(ended))]
        restarting = [r for r in taken if r is ended or r.spec.restart != "temporary"]
        self._emit(
            ChildRestart,
            child_id=ended.spec.id,
            error=_describe(error),
            restarting=[r.spec.id for r in restarting],
            restarts=self._intensity.recent,
        )
        for run in reversed(taken):
            await run.stop()
        for run in taken:
            if run not in restarting:
                self._runs.remove(run)
        for old in restarting:
            new = _Run(old.spec)
            try:
                await self._nursery.start(self._run, new)
            except Exception as exc:  # noqa: BLE001 - a child's failed start is the strategy's to handle
                return old, exc
            self._runs[self._runs.index(old)] = new
        return None, None

    def _escalate(self, run: _Run, error: Exception | None) -> None:
        event = self._emit(
            Escalation,
            child_id=run.spec.id,
            error=_describe(error),
            max_restarts=self._intensity.max_restarts,
            within=self._intensity.within,
        )
        self._escalation = SupervisorEscalation(self.name, run.spec.id, error, event)
        self._body.cancel()

    def _emit(self, event_type: type[Any], **fields: Any) -> Any:
        self._seq += 1
        event = event_type(supervisor=self.name, seq=self._seq, time=trio.current_time(), **fields)
        if self._on_event is not None:
            self._on_event(event)
        return event


def _describe(error: BaseException | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {error}"
