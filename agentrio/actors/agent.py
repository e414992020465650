"""The agent actor and its handle.

An agent is a task in its Runtime's nursery that waits for wake-ups and runs
activities one at a time. Everything reaches it as a message: input through
its inbox (journaled), wake-ups and maintenance through its control mailbox,
approvals through ``answer``. Its phases are ``idle``, ``maintenance``
(reported as idle, but no activity may start) and ``running``.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs
import trio

from ..events import Event, Inbox as InboxEvent, Status
from ..initiator import Initiator, current_initiator, without_initiator
from ..journal import Journal
from ..journal.records import InboxSpliced, QueuedInput, Target
from ..mailbox import Inbox
from ..mailbox.inbox import Input, as_queued
from ..messages import Message, Usage
from ..tools import Tool
from .activity import Activity
from .bus import EventBus
from .scope import AgentScope
from .spec import AgentSpec, RunResult
from .tool_pool import APPROVAL_DECISIONS, Approval

if TYPE_CHECKING:
    from ..supervisors.runtime import Runtime

Setup = Callable[["Agent", AgentScope], Awaitable[None]]

T = TypeVar("T")

CancelCause = Literal["user", "parent", "hook", "disposed"]
CANCEL_CAUSES = ("user", "parent", "hook", "disposed")


class AgentDisposed(RuntimeError):
    """The agent was disposed and accepts no more work."""


@attrs.define(eq=False)
class _Maintenance:
    fn: Callable[[], Awaitable[Any]]
    done: trio.Event = attrs.field(factory=trio.Event)
    result: Any = None
    error: BaseException | None = None


_WAKE = object()


@attrs.define(eq=False)
class _RunWaiter:
    done: trio.Event = attrs.field(factory=trio.Event)
    result: RunResult | None = None

    def resolve(self, result: RunResult) -> None:
        if not self.done.is_set():
            self.result = result
            self.done.set()


def _unhandled(stop_reason: str) -> RunResult:
    return RunResult(stop_reason, [], Usage(), 0)


class Agent:
    def __init__(
        self, runtime: Runtime, spec: AgentSpec, journal: Journal, *, parent_id: str | None = None
    ) -> None:
        self.spec = spec
        self.id = journal.session_id
        self.session_id = journal.session_id
        self.parent_id = parent_id
        #: Which agent and tool call created this agent (None: the host).
        self.initiator: Initiator | None = current_initiator()
        #: The live tool registry: changes apply to calls not yet dispatched.
        self.tools: dict[str, Tool] = {t.name: t for t in spec.tools}
        self._runtime = runtime
        self._journal = journal
        self._state = journal.state
        self._bus = EventBus(self.id, self.session_id)
        self.inbox = Inbox(journal, self._inbox_changed)
        self._control_send, self._control_receive = trio.open_memory_channel[Any](math.inf)
        self._phase: Literal["idle", "maintenance", "running"] = "idle"
        self._status = "idle"
        self._settled = trio.Event()  # replaced each time the agent becomes busy
        self._settled.set()
        self._wake_pending = False
        self._activity: Activity | None = None
        self._closing = False
        self._stopped = trio.Event()
        self._waiters: dict[str, _RunWaiter] = {}
        self._approvals: dict[str, Approval] = {}
        self._teardown_errors: list[Exception] = []
        self._workers: trio.Nursery

    def __repr__(self) -> str:
        return f"<Agent {self.id} {self.spec.name!r} {self.status}>"

    # -- public state ---------------------------------------------------------

    @property
    def runtime(self) -> Runtime:
        return self._runtime

    @property
    def status(self) -> Literal["idle", "running"]:
        return self._status

    @property
    def messages(self) -> tuple[Message, ...]:
        """Committed history."""
        return tuple(self._state.messages)

    @property
    def usage(self) -> Usage:
        """Usage of the whole session."""
        return self._state.usage

    @property
    def pending_approvals(self) -> tuple[str, ...]:
        return tuple(self._approvals)

    # -- input ----------------------------------------------------------------

    async def send(self, message: Input, target: Target, wakeup: bool) -> QueuedInput:
        """Queue ``message`` on ``target`` and, with ``wakeup``, make sure an
        activity will handle it."""
        self._check_open()
        # Waking input cannot join an activity that is being aborted: decide
        # before inserting, so a cancel running inside the insert cannot
        # change the classification.
        if wakeup and self._activity is not None and self._activity.cancel_cause is not None:
            target = "next_turn"
        queued = await self.inbox.put(message, target)
        await self._journal.sync()  # accepted input survives a crash
        if wakeup:
            self._wake()
        return queued

    async def followup(self, message: Input) -> QueuedInput:
        """Run ``message`` in a turn of its own, after the current turn."""
        return await self.send(message, "next_turn", wakeup=True)

    async def steer(self, message: Input) -> QueuedInput:
        """Give ``message`` to the current turn before its next model request
        (or start a turn with it when idle)."""
        return await self.send(message, "next_step", wakeup=True)

    async def inject(self, message: Input) -> QueuedInput:
        """Add ``message`` as context to the next step, without waking."""
        return await self.send(message, "next_step", wakeup=False)

    async def run(self, prompt: Input) -> RunResult:
        """Queue ``prompt`` as a follow-up and return the result of the
        activity that handles it. Never raises for a run that ended: a
        cancel, a limit or a provider error is the stop reason.

        Cancelling the caller withdraws the prompt if it is still queued; an
        activity already handling it goes on (``cancel`` stops it).
        """
        queued = as_queued(prompt)
        waiter = self._waiters[queued.id] = _RunWaiter()
        try:
            await self.followup(queued)
            await waiter.done.wait()
        finally:
            del self._waiters[queued.id]
            if not waiter.done.is_set():
                with trio.CancelScope(shield=True):
                    await self.inbox.remove(queued.id)
        return waiter.result

    async def answer(self, request_id: str, decision: str, reason: str | None = None) -> None:
        """Answer an ``approval_request``: ``approve``, ``deny`` or ``deny_and_stop``."""
        if decision not in APPROVAL_DECISIONS:
            raise ValueError(f"decision must be one of {APPROVAL_DECISIONS}, got {decision!r}")
        try:
            approval = self._approvals[request_id]
        except KeyError:
            raise LookupError(f"no pending approval request {request_id!r}") from None
        if approval.answered.is_set():
            raise ValueError(f"approval request {request_id!r} was already answered")
        approval.decision, approval.reason = decision, reason
        approval.answered.set()

    # -- control --------------------------------------------------------------

    async def cancel(self, cause: CancelCause = "user", keep_inbox: bool = False) -> None:
        """Abort the running activity (if any). Unless ``keep_inbox``, pending
        input is discarded too. Returns at once; ``wait_idle`` waits for the
        abort to settle."""
        if cause not in CANCEL_CAUSES:
            raise ValueError(f"cause must be one of {CANCEL_CAUSES}, got {cause!r}")
        if not keep_inbox:
            await self.inbox.clear()
        self._wake_pending = False
        self._update_settled()
        activity = self._activity
        if activity is not None and activity.cancel_cause is None:
            activity.cancel(cause)
        for child in self._runtime.registry.children(self.id):
            await child.cancel("parent")

    async def wait_idle(self) -> None:
        """Wait until no activity runs or is about to start (a wake-up latched
        during an abort or a maintenance counts)."""
        while self._busy:
            await self._settled.wait()

    async def run_maintenance(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` while no activity runs; wake-ups meanwhile are latched."""
        self._check_open()
        job = _Maintenance(fn)
        self._control_send.send_nowait(job)
        await job.done.wait()
        if job.error is not None:
            raise job.error
        return job.result

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        """``async with agent.subscribe() as events: async for event in events``.
        Iteration ends when the agent is disposed."""
        async with self._bus.subscribe() as events:
            yield events

    async def dispose(self) -> None:
        """Tear the agent down, in order: stop accepting work, dispose its
        children, cancel (cause ``disposed``; the inbox is kept in the
        journal), wait for the activity to settle, close the agent's scope,
        close its handle (subscriptions end, waiting runs return), detach it
        from the registry. Every error on the way is collected and raised
        together at the end."""
        if self._closing:
            await self._stopped.wait()
            return
        self._closing = True
        errors: list[Exception] = []
        try:
            for child in reversed(self._runtime.registry.children(self.id)):
                try:
                    await child.dispose()
                except Exception as exc:
                    errors.append(exc)
            await self.cancel("disposed", keep_inbox=True)
            await self.wait_idle()
            self._control_send.close()  # the actor closes the scope, then the handle
            await self._stopped.wait()
        finally:
            self._runtime.registry.remove(self)
        errors += self._teardown_errors
        if errors:
            raise ExceptionGroup(f"tearing down agent {self.id} failed", errors)

    # -- the actor ------------------------------------------------------------

    async def _main(
        self, setup: Setup | None = None, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        # The agent's own work is attributed to the agent, never to whatever
        # created it (a tool call of another agent, say).
        with without_initiator():
            try:
                failed = None
                async with trio.open_nursery() as background:
                    try:
                        await self._live_in_scope(setup, background, task_status)
                    except Exception as exc:
                        failed = exc  # raised as is, not inside the nursery's group
                    background.cancel_scope.cancel()
                if failed is not None:
                    raise failed
            finally:
                self._close_handle()

    async def _live_in_scope(
        self, setup: Setup | None, background: trio.Nursery, task_status: trio.TaskStatus[None]
    ) -> None:
        # The scope's context managers are entered after the background
        # nursery opened and exited before it closes, so nurseries they own
        # nest inside it.
        async with AsyncExitStack() as stack:
            # First in, so last out: it sees every error of the exits.
            stack.push(self._collect_teardown_error)
            if setup is not None:
                try:
                    await setup(self, AgentScope(stack, background))
                except BaseException:
                    background.cancel_scope.cancel()  # what setup started stops before what it opened closes
                    raise
            # Last in, so first out: background tasks stop before the scope closes.
            stack.callback(background.cancel_scope.cancel)
            await self._serve(task_status)

    async def _serve(self, task_status: trio.TaskStatus[None]) -> None:
        # Tool workers live here, not in the activity, so that a worker
        # ignoring a cancel is abandoned by the activity yet still
        # supervised until it ends.
        async with trio.open_nursery() as workers:
            self._workers = workers
            task_status.started()
            async with self._control_receive:
                async for command in self._control_receive:
                    if command is _WAKE:
                        await self._on_wake()
                    else:
                        await self._maintain(command)
            workers.cancel_scope.cancel()

    def _collect_teardown_error(self, exc_type, exc, tb) -> bool:
        """An error closing the agent's scope is reported by ``dispose``,
        not raised into the Runtime's nursery."""
        if isinstance(exc, Exception) and self._closing:
            self._teardown_errors.append(exc)
            return True
        return False

    def _close_handle(self) -> None:
        for waiter in self._waiters.values():
            waiter.resolve(_unhandled("aborted"))
        self._bus.close()
        self._stopped.set()

    def _wake(self) -> None:
        if self._closing or self._wake_pending:
            return
        self._wake_pending = True
        self._update_settled()
        self._control_send.send_nowait(_WAKE)

    async def _on_wake(self) -> None:
        if not self._wake_pending:
            return  # cleared by a cancel
        if not self.inbox:
            self._wake_pending = False
            self._update_settled()
            return
        self._wake_pending = False
        self._set_phase("running")
        activity = self._activity = Activity(self)
        try:
            result = await activity.execute()
        finally:
            self._activity = None
            self._set_phase("idle")
        for queued in activity.claimed:
            if waiter := self._waiters.get(queued.id):
                waiter.resolve(result)
        # Follow-ups left behind by a stopped run still deserve their turn;
        # after an abort they wait for the next wake-up.
        if result.stop_reason != "aborted" and self._state.next_turn:
            self._wake()

    async def _maintain(self, job: _Maintenance) -> None:
        self._set_phase("maintenance")
        try:
            job.result = await job.fn()
        except Exception as exc:
            job.error = exc
        finally:
            self._set_phase("idle")
            job.done.set()

    @property
    def _busy(self) -> bool:
        return self._phase != "idle" or self._wake_pending

    def _set_phase(self, phase: Literal["idle", "maintenance", "running"]) -> None:
        self._phase = phase
        self._update_settled()
        status = "running" if phase == "running" else "idle"
        if status != self._status:
            self._status = status
            self._bus.emit(Status, status=status)

    def _update_settled(self) -> None:
        if self._busy:
            if self._settled.is_set():
                self._settled = trio.Event()
        else:
            self._settled.set()

    def _inbox_changed(self, record: InboxSpliced, removed: list[QueuedInput]) -> None:
        self._bus.emit(
            InboxEvent,
            target=record.target,
            reason=record.reason,
            inserted=list(record.items),
            removed=removed,
            discarded=record.discards,
            next_step=len(self._state.next_step),
            next_turn=len(self._state.next_turn),
        )
        if record.discards:
            for queued in removed:
                if waiter := self._waiters.get(queued.id):
                    waiter.resolve(_unhandled("aborted"))

    def _check_open(self) -> None:
        if self._closing:
            raise AgentDisposed(f"agent {self.id} is disposed")
