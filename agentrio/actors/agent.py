"""The agent actor and its handle."""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Any, Literal, TypeVar

import attrs
import trio

from .._ids import new_id
from ..events import (
    AgentFailed,
    AgentRestarted,
    ApprovalRequest,
    ChildEvent,
    Event,
    Status,
    StoreFailed,
    StoreRecovered,
)
from ..events import Inbox as InboxEvent
from ..initiator import Initiator, clear_initiator, current_initiator
from ..journal import Journal
from ..journal.records import MAX_TITLE, ActorFailed, SessionRenamed
from ..journal.repair import repair
from ..mailbox import (
    TARGETS,
    ActorStopped,
    Envelope,
    Inbox,
    InboxSpliced,
    Input,
    Mailbox,
    MailboxClosed,
    QueuedInput,
    Target,
    as_queued,
)
from ..messages import Message, ToolCall, Usage
from ..models import BUILTIN_PRICES
from ..supervision import RestartIntensity
from ..tools import Tool
from ..tools.permissions import summarize_call
from .activity import Activity
from .bus import EventBus, Subscription
from .compaction import CompactionOutcome, compact_now
from .goals import set_goal
from .ownership import OwnedTasks
from .ports import ActivityPorts, AgentHost, Approval
from .scope import AgentScope
from .spec import ON_FAILURE, AgentSpec, RunResult, RunStopReason

log = logging.getLogger("agentrio")

#: ``setup(agent, scope)``; it may return a commit callback: a synchronous
#: final re-check, run as the last thing before the agent is published
#: (nothing else runs between the two), whose failure fails the creation.
Setup = Callable[["Agent", AgentScope], Awaitable["Callable[[], None] | None"]]

T = TypeVar("T")

#: ``released``: a runtime gives the session up mid-turn, for another to
#: continue the turn (``rt.serve``).
CancelCause = Literal["user", "parent", "hook", "disposed", "lease_lost", "store_failed", "released"]
CANCEL_CAUSES = ("user", "parent", "hook", "disposed", "lease_lost", "store_failed", "released")
APPROVAL_DECISIONS = ("approve", "deny", "deny_and_stop")

#: Messages that may wait in an agent's mailbox before senders wait.
MAILBOX_CAPACITY = 64


class AgentDisposed(RuntimeError):
    """The agent was disposed (or failed for good) and accepts no more work."""


# -- the messages an agent actor reads -----------------------------------------


@attrs.frozen
class _Send:
    queued: QueuedInput
    target: Target
    wakeup: bool
    #: Reply with a waiter for the result of the activity that handles it.
    wait: bool = False
    #: With ``wait``: what a failure of its turn leaves (None: the spec's).
    on_failure: str | None = None


@attrs.frozen
class _Withdraw:
    """A ``run()`` caller gave up: forget its waiter, drop its input if it
    is still queued."""

    input_id: str


@attrs.frozen
class _Replace:
    input_id: str
    message: Any


@attrs.frozen
class _Cancel:
    cause: str
    keep_inbox: bool


@attrs.frozen
class _Answer:
    request_id: str
    decision: str
    reason: str | None


@attrs.frozen
class _Maintain:
    fn: Callable[[], Awaitable[Any]]


@attrs.frozen
class _SetGoal:
    text: str
    max_turns: int | None


@attrs.frozen
class _Rename:
    title: str


@attrs.frozen
class _Resume:
    """Start the pending input a restored session holds (first continuing
    the turn crash repair closed, with ``continue_turn``)."""

    continue_turn: bool = False


@attrs.frozen
class _Close:
    """Stop accepting work (the first step of ``dispose``); answers whether
    the agent was idle."""


@attrs.define(eq=False)
class _RunWaiter:
    done: trio.Event = attrs.field(factory=trio.Event)
    result: RunResult | None = None
    on_failure: str | None = None

    def resolve(self, result: RunResult) -> None:
        if not self.done.is_set():
            self.result = result
            self.done.set()


@attrs.define(eq=False)
class _PendingApproval:
    answered: trio.Event = attrs.field(factory=trio.Event)
    answer: Approval | None = None


def _unhandled(stop_reason: RunStopReason, error: str | None = None) -> RunResult:
    return RunResult(stop_reason, [], Usage(), 0, error)


class Agent:
    """A live agent: the handle callers hold, and the actor behind it.

    The actor is a task in its supervisor's nursery (the Runtime's, or its
    parent agent's). It alone changes the agent's inbox, journal and state:
    every public method posts a message to its bounded mailbox and waits for
    the reply, so a method called from any task changes nothing in that task.
    Activities (runs), their model streams and tool workers are tasks of the
    agent's own nursery; child agents live in it too, so the nursery tree is
    the agent tree.

    Guarantees:

    - Input accepted by ``send``/``steer``/``followup``/``inject``/``run`` is
      durable when the call returns.
    - ``cancel`` aborts the running activity; ``wait_idle`` then returns only
      when the activity has settled and every tool it started has ended
      (process groups included), or was reported abandoned.
    - A failure inside the agent (a hook that raises, an internal error)
      ends its run with stop reason ``error``; it never reaches the Runtime
      or another agent. With ``AgentSpec(restart="on_crash")`` the agent is
      restored from its journal and carries on with its pending input, at
      most ``restart_intensity`` times; past that it stops for good.

    Hibernation. An agent with nothing to do need not keep a task: with the
    Runtime's ``hibernate_after`` (seconds; ``None`` turns it off), an agent
    idle that long (no activity, maintenance, tool worker, pending run,
    approval or awake child; its mailbox empty) hibernates. Its actor task
    and nursery end and its mailbox is dropped; what it needs to wake stays
    in the handle, which the registry holds: its spec, its journal and the
    session state projected from it, and its event bus and tool registry
    once made. A new agent that has
    nothing to repair and no ``setup`` is created hibernating: it gets a
    task only when first used. Guarantees:

    - Transparent: any call that needs the actor (``run``, ``stream``,
      ``send``/``steer``/``followup``/``inject``, ``withdraw``,
      ``replace``, ``answer``, ``set_goal``, ``rename``, ``compact``,
      ``run_maintenance``; ``resume`` and ``cancel`` when they have
      pending input to act on) wakes it first, in its supervisor's nursery
      (a child wakes its parent first), and then behaves as on an agent
      that never slept. Reading state (``status``, ``messages``,
      ``usage``, ``pending_input``, ``children``, ``title``...),
      ``wait_idle`` and ``subscribe`` do not wake it: a subscriber of a
      hibernating agent sees every event from the next wake-up on, with
      ``seq`` going on where it stopped.
    - ``dispose`` of a hibernating agent, and the Runtime's exit, close it
      without waking it (its children hibernate too: a parent hibernates
      only once its children have).
    - A failure while waking fails that agent alone, as a failed start
      would: the caller gets the error, the agent emits ``agent_failed``
      (on its own stream and the Runtime's) and is disposed, and later
      calls raise ``AgentDisposed``.
    - Never hibernating: an agent with a ``setup`` scope (what setup opened
      lives as long as the task), so also an agent of a store that takes
      remote input and leases its sessions (``PostgresStore``: its scope
      takes the posted input and keeps the lease, which hibernation would
      give up) and an ACP session with MCP servers.

    An idle agent is a handful of small objects: attributes live in slots,
    and what only some agents need (a restart budget, a settled event while
    busy, a list of teardown errors, the event bus before anyone listens)
    is made when needed, since the garbage collector walks every live
    agent's objects on each full collection.
    """

    __slots__ = (
        "__weakref__",
        "_activity",
        "_approvals",
        "_asleep",
        "_bus_or_none",
        "_closing",
        "_continue",
        "_disposing",
        "_ended",
        "_failed",
        "_holds",
        "_idle_scope",
        "_inbox",
        "_intensity",
        "_journal",
        "_mailbox",
        "_maintenance",
        "_nursery",
        "_owned",
        "_phase",
        "_runtime",
        "_scoped",
        "_settled",
        "_starting",
        "_state",
        "_stop_event",
        "_teardown_errors",
        "_tools",
        "_transition",
        "_waiters",
        "_wake_pending",
        "_workers",
        "id",
        "initiator",
        "parent_id",
        "session_id",
        "spec",
    )

    # Made when the actor (re)starts, dropped when it hibernates (``_revive``,
    # ``_drop_live_parts``): a hibernating agent has none of them.
    _mailbox: Mailbox[Any]
    _owned: OwnedTasks
    _waiters: dict[str, _RunWaiter]
    _approvals: dict[str, _PendingApproval]
    #: Ids of the calls whose workers run. A dict of str, unlike a set, is
    #: not tracked by the garbage collector.
    _workers: dict[str, None]
    # A list, not a deque: rarely more than one waits, and an empty deque
    # costs every idle agent ~600 bytes.
    _maintenance: list[Any]

    def __init__(
        self, runtime: AgentHost, spec: AgentSpec, journal: Journal, *, parent_id: str | None = None
    ) -> None:
        self.spec = spec
        self.id = journal.session_id
        self.session_id = journal.session_id
        self.parent_id = parent_id
        #: Which agent and tool call created this agent (None: the host).
        self.initiator: Initiator | None = current_initiator()
        self._runtime = runtime
        #: The live tool registry (``tools``), made when first asked for (a
        #: run asks): kept for good then, since its holders may change it.
        self._tools: dict[str, Tool] | None = None
        self._bus_or_none: EventBus | None = None
        self._inbox: Inbox | None = None
        #: No actor task: not started yet, hibernating, or ended.
        self._asleep = True
        self._attach(journal)
        self._phase: Literal["idle", "maintenance", "running"] = "idle"
        #: Set when the agent settles; None while it is settled.
        self._settled: trio.Event | None = None
        self._wake_pending = False
        #: Whether the next activity first continues a repaired turn.
        self._continue = False
        self._activity: Activity | None = None
        self._closing = False  # the actor accepts no more input
        self._disposing = False  # dispose() has begun
        self._failed: str | None = None
        #: The handle is closed (``_stopped``, made when waited for, is set).
        self._ended = False
        self._stop_event: trio.Event | None = None
        self._teardown_errors: tuple[Exception, ...] = ()
        #: The restart budget, for an agent that restarts.
        self._intensity = RestartIntensity(*spec.restart_intensity) if spec.restart == "on_crash" else None
        self._nursery: trio.Nursery | None = None
        #: The supervisor's task status, until the actor serves.
        self._starting: trio.TaskStatus[None] | None = None
        #: Whether a setup gave the agent a scope of its own.
        self._scoped = False
        #: Set while the actor starts or goes to sleep: wait for it, then look again.
        self._transition: trio.Event | None = None
        #: Calls between deciding to post and their reply: the agent stays awake.
        self._holds = 0
        #: The scope of the actor's wait for its next message, while it waits.
        self._idle_scope: trio.CancelScope | None = None

    def __repr__(self) -> str:
        return f"<Agent {self.id} {self.spec.name!r} {self.status}>"

    def _attach(self, journal: Journal) -> None:
        self._journal = journal
        self._state = journal.state
        self._inbox = None
        if self._bus_or_none is not None:
            self._bus_or_none.history = journal.state
        if not self._asleep:
            journal.guard = self._owned

    def _revive(self) -> None:
        """Make what only a running actor needs (at its start and at each
        wake-up)."""
        self._mailbox = Mailbox(MAILBOX_CAPACITY, f"agent {self.id}")
        self._owned = OwnedTasks(f"agent {self.id}")
        self._journal.guard = self._owned
        self._waiters = {}
        self._approvals = {}
        self._workers = {}
        self._maintenance = []
        self._asleep = False

    def _drop_live_parts(self) -> None:
        """Hibernate: drop what ``_revive`` made, and the inbox (made again
        when needed)."""
        del self._mailbox, self._owned, self._waiters, self._approvals, self._workers, self._maintenance
        self._journal.guard = None
        self._inbox = None
        self._nursery = None

    @property
    def tools(self) -> dict[str, Tool]:
        """The live tool registry: changes apply to calls not yet dispatched
        (and survive hibernation)."""
        if self._tools is None:
            self._tools = {t.name: t for t in self.spec.tools}
        return self._tools

    @property
    def inbox(self) -> Inbox:
        """The agent's input queues (changed only by the actor)."""
        if self._inbox is None:
            self._inbox = Inbox(self._state.queue, self._journal.append, self._inbox_changed)
        return self._inbox

    @property
    def _bus(self) -> EventBus:
        """The agent's event bus, made when first needed."""
        if self._bus_or_none is None:
            self._bus_or_none = EventBus(self.id, self.session_id)
            self._bus_or_none.history = self._state
        return self._bus_or_none

    @property
    def hibernating(self) -> bool:
        """Whether the agent has no actor task now (created or gone to sleep
        idle; see the class docstring), nor is one starting or ending.
        False once it is disposed."""
        return self._asleep and self._transition is None and not self._ended

    @property
    def _stopped(self) -> trio.Event:
        """Set once the handle is closed."""
        if self._stop_event is None:
            self._stop_event = trio.Event()
            if self._ended:
                self._stop_event.set()
        return self._stop_event

    # -- public state (read from any task) ------------------------------------

    @property
    def runtime(self) -> AgentHost:
        """The Runtime this agent runs in."""
        return self._runtime

    @property
    def status(self) -> Literal["idle", "running"]:
        return "running" if self._phase == "running" else "idle"

    @property
    def messages(self) -> tuple[Message, ...]:
        """Committed history."""
        return tuple(self._state.messages)

    @property
    def usage(self) -> Usage:
        """Usage of the whole session."""
        return self._state.usage

    @property
    def pending_input(self) -> tuple[QueuedInput, ...]:
        """Input waiting in the inbox: next-step input, then next-turn input,
        each oldest first."""
        return (*self._state.next_step, *self._state.next_turn)

    @property
    def pending_approvals(self) -> tuple[str, ...]:
        return () if self._asleep else tuple(self._approvals)

    @property
    def running_tools(self) -> tuple[str, ...]:
        """Ids of the tool calls whose workers are still running (an
        abandoned worker included)."""
        return () if self._asleep else tuple(self._workers)

    @property
    def failed(self) -> str | None:
        """Why the agent stopped for good, when it failed past its restarts."""
        return self._failed

    @property
    def _tasks(self) -> trio.Nursery:
        """The agent's nursery, while it lives."""
        assert self._nursery is not None
        return self._nursery

    def children(self) -> tuple[Agent, ...]:
        """Live agents this agent created, oldest first."""
        children: tuple[Agent, ...] = self._runtime.registry.children(self.id)
        return children

    # -- the client side: post a message, await the reply ---------------------

    async def _call(self, message: Any) -> Any:
        self._check_open()
        self._check_not_in_setup()
        try:
            return await self._post(message)
        except (MailboxClosed, ActorStopped):
            raise AgentDisposed(f"agent {self.id} is disposed") from None

    async def _post(self, message: Any) -> Any:
        """Call the actor, waking it first if it hibernates; raises
        ``MailboxClosed``/``ActorStopped`` as the mailbox does. The agent
        stays awake from the decision to post until the reply."""
        self._holds += 1
        try:
            while self._asleep:
                await self._rouse()
            return await self._mailbox.call(message)
        finally:
            self._holds -= 1
            if not self._holds:
                self._rearm()

    @asynccontextmanager
    async def _awake_host(self) -> AsyncIterator[trio.Nursery]:
        """This agent awake and serving, and kept awake for the block: the
        nursery a child starts in."""
        self._holds += 1
        try:
            while self._asleep or self._transition is not None:
                await self._rouse()
            yield self.children_nursery
        finally:
            self._holds -= 1
            if not self._holds:
                self._rearm()

    async def _rouse(self) -> None:
        """Start the actor of a hibernating agent again, in its supervisor's
        nursery (a child's parent woken first); or wait for the start, or
        the fall asleep, under way (the caller then looks again). The
        mailbox is made here, so callers post at once: the actor finds their
        messages when it first runs. A failure fails this agent alone: it is
        reported (``agent_failed``), the agent disposed, and the error
        raised to the caller."""
        if self._transition is not None:
            await self._transition.wait()
            return
        if self._closing or self._disposing or self._ended:
            raise MailboxClosed(f"agent {self.id} is disposed")
        transition = self._transition = trio.Event()
        failure: Exception | None = None
        started = False
        try:
            if self.parent_id is None:
                self._start_actor(self._runtime.nursery)
            else:
                parent = self._runtime.registry.get(self.parent_id)
                if parent is None:
                    raise AgentDisposed(f"agent {self.id}: its parent {self.parent_id} is gone")
                async with parent._awake_host() as host:
                    self._start_actor(host)
            started = True
        except (AgentDisposed, MailboxClosed):
            # Its parent is gone, or going: so is the agent.
            failure = MailboxClosed(f"agent {self.id} is disposed")
        except Exception as exc:  # noqa: BLE001 - reported, then raised to the caller
            failure = exc
            self._fail_for_good(exc)
        finally:
            if not started:  # (else the actor ends the transition once it serves)
                self._transition = None
                transition.set()
        if failure is not None:
            with trio.CancelScope(shield=True):
                try:
                    await self.dispose()
                except Exception:
                    log.exception("agent %s: disposing it after it failed to wake failed", self.id)
            raise failure

    def _start_actor(self, host: trio.Nursery) -> None:
        """Make the actor's parts and start its task in ``host``."""
        self._revive()
        try:
            host.start_soon(self._act, None)
        except BaseException:
            self._drop_live_parts()
            self._asleep = True
            raise

    def _rearm(self) -> None:
        """Start the idle countdown, if the actor waits for a message and the
        agent may hibernate."""
        scope = self._idle_scope
        after = self._runtime.hibernate_after
        if scope is not None and after is not None and self._may_hibernate():
            scope.deadline = trio.current_time() + after

    def _may_hibernate(self) -> bool:
        """Whether nothing but new input could give the awake agent work
        (its nursery's tasks are checked when the countdown ends)."""
        return (
            not self._holds
            and self._phase == "idle"
            and not self._wake_pending
            and self._activity is None
            and self._starting is None
            and not (self._closing or self._disposing or self._scoped)
            and self._runtime.hibernate_after is not None
            and not (self._waiters or self._approvals or self._workers or self._maintenance)
            and not len(self._mailbox)
            and all(child._asleep for child in self.children())
        )

    async def send(self, message: Input, target: Target, wakeup: bool) -> QueuedInput:
        """Queue ``message`` on ``target`` and, with ``wakeup``, make sure an
        activity will handle it. Durable when it returns."""
        queued: QueuedInput
        queued, _ = await self._call(_Send(as_queued(message), _check_target(target), wakeup))
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

    async def run(self, prompt: Input, *, on_failure: Literal["keep", "rollback"] | None = None) -> RunResult:
        """Queue ``prompt`` as a follow-up and return the result of the turn
        that answered it, once the activity that ran it has ended. Never
        raises for a run that ended: a cancel, a limit or a provider error
        is the stop reason.

        ``on_failure`` (default: the spec's, ``keep``): ``rollback`` leaves
        history as it was before the turn when it stops aborted, on a
        time-out or an error (``RunResult.rolled_back``); the journal keeps
        those messages (a fork at that turn has them).

        Cancelling the caller withdraws the prompt if it is still queued; an
        activity already handling it goes on (``cancel`` stops it).
        """
        if on_failure is not None and on_failure not in ON_FAILURE:
            raise ValueError(f"on_failure must be one of {ON_FAILURE}, got {on_failure!r}")
        async with self._prompt(prompt, on_failure) as waiter:
            await waiter.done.wait()
        assert waiter.result is not None  # (set before done)
        return waiter.result

    @asynccontextmanager
    async def _prompt(self, prompt: Input, on_failure: str | None = None) -> AsyncIterator[_RunWaiter]:
        """Queue ``prompt`` with a waiter for its result; leaving the block
        before it is answered withdraws the prompt if no turn took it yet."""
        queued, waiter = await self._call(_Send(as_queued(prompt), "next_turn", True, True, on_failure))
        try:
            yield waiter
        finally:
            if not waiter.done.is_set():
                with trio.CancelScope(shield=True):
                    try:
                        await self._post(_Withdraw(queued.id))
                    except (MailboxClosed, ActorStopped):
                        pass

    async def withdraw(self, input_id: str) -> bool:
        """Discard a pending input (by its ``QueuedInput.id``); False when no
        turn can take it any more, because one already did."""
        withdrawn: bool = await self._call(_Withdraw(input_id))
        return withdrawn

    async def replace(self, input_id: str, message: Input) -> bool:
        """Replace a pending input (by its ``QueuedInput.id``) in place, keeping
        its id and its waiting ``run()``; False when a turn already took it."""
        replaced: bool = await self._call(_Replace(input_id, message))
        return replaced

    async def answer(self, request_id: str, decision: str, reason: str | None = None) -> None:
        """Answer an ``approval_request``: ``approve``, ``deny`` or ``deny_and_stop``."""
        if decision not in APPROVAL_DECISIONS:
            raise ValueError(f"decision must be one of {APPROVAL_DECISIONS}, got {decision!r}")
        await self._call(_Answer(request_id, decision, reason))

    async def cancel(
        self, cause: CancelCause = "user", keep_inbox: bool = False, *, reason: str | None = None
    ) -> None:
        """Abort the running activity (if any) and cancel this agent's
        children (cause ``parent``). Unless ``keep_inbox``, pending input is
        discarded too. Returns once the abort has begun; ``wait_idle`` waits
        for it to settle. A ``reason`` (for the ``hook`` cause, say: which
        hook and why) goes with the cause: the run's ``cancel_cause`` is then
        ``"hook: <reason>"``."""
        if cause not in CANCEL_CAUSES:
            raise ValueError(f"cause must be one of {CANCEL_CAUSES}, got {cause!r}")
        if self._ended:
            return
        self._check_not_in_setup()
        # A hibernating agent runs nothing: it wakes only to discard its input.
        if not self._asleep or (not keep_inbox and self.pending_input):
            try:
                await self._post(_Cancel(f"{cause}: {reason}" if reason else cause, keep_inbox))
            except (MailboxClosed, ActorStopped):
                pass  # nothing left to cancel
        for child in self.children():
            await child.cancel("parent")

    async def wait_idle(self) -> None:
        """Wait until no activity runs or is about to start (a wake-up latched
        during an abort or a maintenance counts)."""
        while self._busy and not self._ended:
            assert self._settled is not None  # an event while busy (_update_settled)
            await self._settled.wait()

    async def run_maintenance(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` in the agent while no activity runs; wake-ups meanwhile
        are latched."""
        result: T = await self._call(_Maintain(fn))
        return result

    async def compact(self, instructions: str | None = None) -> CompactionOutcome:
        """Replace the older part of history by a summary now (once the
        running activity, if any, has ended); ``instructions`` add to what
        the summary keeps. ``compacted`` is False when history is too short
        to compact; ``CompactionFailed`` when the summary request failed,
        history unchanged."""
        return await self.run_maintenance(lambda: compact_now(self._ports(), instructions))

    @asynccontextmanager
    async def subscribe(self, since: int | None = None) -> AsyncIterator[Subscription]:
        """``async with agent.subscribe() as events: async for event in events``.
        Iteration ends when the agent is disposed. The buffer is bounded:
        see ``Subscription`` for what a reader that lags gets.

        With ``since`` (the ``seq`` of an event this agent emitted), the
        subscription first replays what came after it, then goes live, with
        no gap and no duplicate. The replay log (started by the agent's first
        subscriber, its latest ``REPLAY_CAPACITY`` events) gives every
        lifecycle event, deltas coalesced, a message still streaming as one
        ``message_update`` with its text so far. For a ``since`` older than
        the log, the journal stands in for what the log no longer holds: a
        ``lagged`` event counting those seqs (``missed``), then each message
        of history (``messages``, and the open step's) announced among them,
        in order, as its ``message_end`` (``replayed``, with the seq it had),
        then the log. Messages a compaction replaced are not replayed, nor
        are those this process did not announce (restored history)."""
        async with self._bus.subscribe(since) as events:
            yield events

    @asynccontextmanager
    async def stream(self, prompt: Input) -> AsyncIterator[RunStream]:
        """``async with agent.stream(prompt) as run: async for event in run``:
        queue ``prompt`` as ``run`` does and iterate every event from then
        on, in order, up to and including the ``agent_end`` of the activity
        that answered it; ``run.result`` then holds its ``RunResult``.
        Leaving the block early withdraws the prompt if it is still queued."""
        async with self._bus.subscribe() as events, self._prompt(prompt) as waiter:
            yield RunStream(events, waiter)

    async def set_goal(self, text: str, *, max_turns: int | None = None) -> None:
        """Pursue ``text``: turns start by themselves, one after another,
        until the model ends a reply with ``goals.GOAL_MET``, ``max_turns``
        turns have run, or a turn does not complete (``goal_start`` and
        ``goal_end`` events; ``goal_set``/``goal_ended`` records). Returns once
        the goal is journaled and its first turn queued."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("set_goal needs the goal as non-empty text")
        if max_turns is not None and (
            isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns <= 0
        ):
            raise ValueError(f"max_turns must be a positive int or None, got {max_turns!r}")
        await self._call(_SetGoal(text, max_turns))

    @property
    def title(self) -> str | None:
        """The title the session was last renamed to (None: never renamed)."""
        return self._state.title

    async def rename(self, title: str) -> None:
        """Give the session ``title`` (whitespace runs collapsed; at most
        ``MAX_TITLE`` characters): a ``session_renamed`` record, durable when
        this returns, at once even while a turn runs."""
        if not isinstance(title, str) or not (title := " ".join(title.split())):
            raise ValueError("rename needs the title as non-empty text")
        if len(title) > MAX_TITLE:
            raise ValueError(f"a title is at most {MAX_TITLE} characters, this one has {len(title)}")
        await self._call(_Rename(title))

    async def resume(self, *, continue_turn: bool = False) -> None:
        """Start the pending input of a restored session (a restored agent
        waits for this, or for new input, before it runs). With
        ``continue_turn``, the run first continues the turn that crash repair
        closed, so that the input it had taken in gets a real answer: the
        model sees the repaired history and the turn runs to its end (no
        model request if the crash fell after the turn's final answer). A
        hibernating agent with nothing to resume is not woken."""
        if self._asleep and not (continue_turn or self._continue or self.pending_input):
            self._check_open()
            return
        await self._call(_Resume(continue_turn))

    async def dispose(self) -> None:
        """Tear the agent down, in order: stop accepting work, dispose its
        children (newest first), cancel (cause ``disposed``; the inbox is
        kept in the journal), wait for the activity and its tools to end,
        close the agent's scope, close its handle (subscriptions end, waiting
        runs return), detach it from the registry. Every error on the way is
        collected and raised together at the end. A hibernating agent is not
        woken: its children (hibernating too) are disposed, then its handle
        closed."""
        if self._disposing:
            if not self._ended:
                await self._stopped.wait()
            return
        self._disposing = True
        errors: list[Exception] = []
        try:
            while self._transition is not None:  # a wake-up or a fall asleep under way
                await self._transition.wait()
            if self._asleep:
                await self._dispose_children(errors)
                self._close_handle()
            else:
                if not self._has_nothing_to_stop():
                    await self._stop_work(errors)
                self._mailbox.close()  # the actor's loop ends: it closes the scope, then the handle
                if not self._ended:
                    await self._stopped.wait()
        finally:
            await self._runtime.detach(self)
        if error := self._teardown_error(errors):
            raise error

    def _has_nothing_to_stop(self) -> bool:
        """Idle, without children, and nothing waiting in the mailbox (which
        the actor handles before it stops): dispose needs no round trip."""
        if self._asleep:
            return self._transition is None and not self.children()
        return not self._busy and self._activity is None and not len(self._mailbox) and not self.children()

    def _teardown_error(self, errors: list[Exception]) -> ExceptionGroup | None:
        errors = [*errors, *self._teardown_errors]
        return ExceptionGroup(f"tearing down agent {self.id} failed", errors) if errors else None

    async def _stop_work(self, errors: list[Exception]) -> None:
        """Dispose's middle steps: stop accepting work, dispose the children
        (newest first, their errors into ``errors``), cancel, wait."""
        try:
            idle = await self._mailbox.call(_Close())
        except (MailboxClosed, ActorStopped):
            idle = False
        children = await self._dispose_children(errors)
        if children or not idle:  # (an idle agent has nothing to cancel or wait for)
            await self.cancel("disposed", keep_inbox=True)
            await self.wait_idle()

    async def _dispose_children(self, errors: list[Exception]) -> tuple[Agent, ...]:
        """Dispose the children, newest first, their errors into ``errors``;
        return them."""
        children = self.children()
        for child in reversed(children):
            try:
                await child.dispose()
            except Exception as exc:  # noqa: BLE001 - each child is disposed; errors told together
                errors.append(exc)
        return children

    # -- the actor ------------------------------------------------------------

    async def main(
        self, setup: Setup | None = None, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """The actor's body, started by its supervisor with ``nursery.start``.
        A failure before it has started (in ``setup``, say) is raised to the
        starter; after that no failure leaves this task."""
        # Held only until the actor serves: afterwards it would keep trio's
        # start-up nursery alive for the agent's whole life.
        self._starting = task_status
        del task_status
        self._scoped = setup is not None
        try:
            self._revive()
        except BaseException:
            self._starting = None
            self._close_handle()
            raise
        await self._act(setup)

    async def _act(self, setup: Setup | None) -> None:
        """The actor's body, from its first start (``main``) or a wake-up
        (``_rouse``, which made its parts)."""
        self._owned.add(trio.lowlevel.current_task())
        # The agent's own work is attributed to the agent, never to whatever
        # created it (a tool call of another agent, say).
        clear_initiator()
        asleep = False
        try:
            asleep = await self._live(setup)
        except Exception as exc:
            if self._starting is not None:
                raise
            self._fail_for_good(exc)
        finally:
            self._starting = None
            if asleep:
                self._fell_asleep()
            else:
                self._close_handle()

    def _fell_asleep(self) -> None:
        """The end of the actor task of an agent that hibernates."""
        self._drop_live_parts()
        transition, self._transition = self._transition, None
        assert transition is not None  # (set when it decided to sleep)
        transition.set()
        parent = self._runtime.registry.get(self.parent_id) if self.parent_id is not None else None
        if parent is not None and not parent._asleep:
            parent._rearm()  # it may hibernate too, now

    async def _live(self, setup: Setup | None) -> bool:
        """Repair, set up and serve; returns whether the agent hibernates."""
        # Crash repair happens here, in the actor, so two openers of one
        # session can never both repair it.
        await repair(self._journal)
        if setup is None:
            # No scope to enter and no background task: serve at once.
            # (A background nursery and an exit stack cost every idle agent
            # about 1.5 KB, and the garbage collector walks them.)
            try:
                return await self._serve()
            except Exception as exc:
                if not self._collect_teardown_error(type(exc), exc, exc.__traceback__):
                    raise
            return False
        failed = None
        async with trio.open_nursery() as background:
            try:
                await self._live_in_scope(setup, background)
            except Exception as exc:  # noqa: BLE001 - raised below, as is
                failed = exc  # raised as is, not inside the nursery's group
            background.cancel_scope.cancel()
        if failed is not None:
            raise failed
        return False  # (an agent with a scope never hibernates)

    async def _live_in_scope(self, setup: Setup, background: trio.Nursery) -> None:
        # The scope's context managers are entered after the background
        # nursery opened and exited before it closes, so nurseries they own
        # nest inside it.
        async with AsyncExitStack() as stack:
            # First in, so last out: it sees every error of the exits.
            stack.push(self._collect_teardown_error)
            try:
                commit = await setup(self, AgentScope(stack, background))
                if commit is not None:
                    if not callable(commit):
                        raise TypeError(f"setup returned {commit!r}: expected a commit callback or None")
                    commit()  # synchronous: nothing runs between it and publishing
            except BaseException:
                background.cancel_scope.cancel()  # what setup started stops before what it opened closes
                raise
            # Last in, so first out: background tasks stop before the scope closes.
            stack.callback(background.cancel_scope.cancel)
            await self._serve()

    async def _serve(self) -> bool:
        """Handle messages until the mailbox closes (False) or the agent has
        been idle for the Runtime's ``hibernate_after`` (True)."""
        mailbox = self._mailbox
        while True:
            try:
                # Activities, tool workers, maintenance and child agents all
                # live here: a worker ignoring a cancel is abandoned by its
                # activity yet still supervised until it ends.
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    if self._starting is not None:
                        self._starting.started()
                        self._starting = None
                    if self._transition is not None:  # woken: its wakers may go on
                        self._transition.set()
                        self._transition = None
                    self._start_if_woken()
                    # After a countdown that found the nursery still running
                    # a task (a background job), wait without one.
                    patient = False
                    while True:
                        try:
                            envelope = await self._receive(mailbox, patient)
                        except MailboxClosed:
                            self._closing = True  # disposed: what follows is teardown
                            break
                        if envelope is None:  # idle for hibernate_after
                            if nursery.child_tasks or not self._may_hibernate():
                                patient = True
                                continue
                            # From here on, callers wait for the task to end, then wake it.
                            self._asleep, self._transition = True, trio.Event()
                            break
                        patient = False
                        if isinstance(envelope.message, _Maintain):
                            # Answered when it has run, while no activity does.
                            self._maintenance.append(envelope)
                            self._start_if_woken()
                            continue
                        try:
                            envelope.reply(await self._handle(envelope.message))
                        except Exception as exc:  # noqa: BLE001 - the caller gets the handler's error
                            envelope.fail(exc)
                        except BaseException:
                            envelope.fail(ActorStopped(f"agent {self.id} stopped while handling a message"))
                            raise
                        # Not kept while the agent waits for the next one: its
                        # reply holds the run's result until then.
                        del envelope
                        self._start_if_woken()
                    nursery.cancel_scope.cancel()
                return self._asleep
            except Exception as exc:
                if self._starting is not None or not await self._crashed(f"{type(exc).__name__}: {exc}"):
                    raise AgentStoppedForGood(f"{type(exc).__name__}: {exc}") from exc

    async def _receive(self, mailbox: Mailbox[Any], patient: bool) -> Envelope[Any] | None:
        """The next message; None when the agent may hibernate and none came
        for ``hibernate_after`` seconds (counted from when it became idle:
        see ``_rearm``)."""
        after = self._runtime.hibernate_after
        if after is None or self._scoped or len(mailbox):
            return await mailbox.receive()
        deadline = trio.current_time() + after if not patient and self._may_hibernate() else math.inf
        with trio.CancelScope(deadline=deadline) as self._idle_scope:
            try:
                return await mailbox.receive()
            finally:
                self._idle_scope = None
        return None

    async def _handle(self, message: Any) -> Any:
        match message:
            case _Send():
                return await self._accept(message)
            case _Withdraw(input_id=input_id):
                self._waiters.pop(input_id, None)
                return await self.inbox.remove(input_id)
            case _Replace(input_id=input_id, message=replacement):
                replaced = await self.inbox.replace(input_id, replacement)
                await self._journal.sync()  # durable when it returns
                return replaced
            case _Cancel(cause=cause, keep_inbox=keep_inbox):
                await self._cancel(cause, keep_inbox)
            case _Answer():
                self._answer(message)
            case _Resume(continue_turn=continue_turn):
                self._continue = self._continue or continue_turn
                if self.inbox or self._continue:
                    self._wake()
            case _Rename(title=title):
                await self._journal.append(SessionRenamed(title))
                await self._journal.sync()
            case _SetGoal(text=text, max_turns=max_turns):
                await set_goal(self._ports(), text, max_turns)
                await self._journal.sync()
                self._wake()
            case _Close():
                self._closing = True
                # A closing agent starts no activity, so a latched wake-up
                # would keep it busy for good: the runs it was for are
                # resolved when the handle closes, their input kept queued.
                self._wake_pending = False
                self._update_settled()
                # Idle, it stays idle: nothing can wake it any more.
                return not self._busy and self._activity is None
            case _:
                raise TypeError(f"agent {self.id} cannot handle {message!r}")
        return None

    async def _accept(self, message: _Send) -> tuple[QueuedInput, _RunWaiter | None]:
        if self._closing:
            raise AgentDisposed(f"agent {self.id} is disposed")
        target = message.target
        # Waking input cannot join an activity that is being aborted.
        if message.wakeup and self._activity is not None and self._activity.cancel_cause is not None:
            target = "next_turn"
        queued = await self.inbox.put(message.queued, target)
        await self._journal.sync()  # accepted input survives a crash
        waiter = None
        if message.wait:
            waiter = self._waiters[queued.id] = _RunWaiter(on_failure=message.on_failure)
        if message.wakeup:
            self._wake()
        return queued, waiter

    async def _cancel(self, cause: str, keep_inbox: bool) -> None:
        if not keep_inbox:
            await self.inbox.clear()
        # A latched wake-up is dropped, unless a run() still waits for input
        # that stays queued: it would wait forever. (Not while closing: no
        # activity starts any more, and the handle resolves those runs.)
        self._wake_pending = (
            keep_inbox
            and not self._closing
            and any(q.id in self._waiters for q in (*self._state.next_step, *self._state.next_turn))
        )
        self._update_settled()
        activity = self._activity
        if activity is not None and activity.cancel_cause is None:
            activity.cancel(cause)

    def _answer(self, message: _Answer) -> None:
        pending = self._approvals.get(message.request_id)
        if pending is None:
            raise LookupError(f"no pending approval request {message.request_id!r}")
        if pending.answered.is_set():
            raise ValueError(f"approval request {message.request_id!r} was already answered")
        pending.answer = Approval(message.decision, message.reason)
        pending.answered.set()

    async def _ask(self, call: ToolCall, tool: Tool, why: str | None) -> Approval:
        request_id = new_id("approval")
        pending = self._approvals[request_id] = _PendingApproval()
        try:
            self._bus.emit(
                ApprovalRequest,
                request_id=request_id,
                call=call,
                tool_name=call.name,
                summary=await summarize_call(call, tool),
                reason=why,
            )
            await pending.answered.wait()
        finally:
            del self._approvals[request_id]
        assert pending.answer is not None  # (set before answered)
        return pending.answer

    async def _maintain(self, envelope: Any) -> None:
        task = trio.lowlevel.current_task()
        self._owned.add(task)
        try:
            envelope.reply(await envelope.message.fn())
        except Exception as exc:  # noqa: BLE001 - the caller gets fn's error
            envelope.fail(exc)
        except BaseException:
            envelope.fail(ActorStopped(f"agent {self.id} stopped during maintenance"))
            raise
        finally:
            self._owned.discard(task)
            self._set_phase("idle")
        self._start_if_woken()

    def _wake(self) -> None:
        if self._closing or self._wake_pending:
            return
        self._wake_pending = True
        self._update_settled()

    def _start_if_woken(self) -> None:
        """Start what waits, when the agent is idle: maintenance first (a
        wake-up meanwhile stays latched), then an activity if woken."""
        if self._phase != "idle":
            return
        while self._maintenance:
            envelope = self._maintenance.pop(0)
            if not envelope.withdrawn:
                self._set_phase("maintenance")
                self._tasks.start_soon(self._maintain, envelope)
                return
        if not self._wake_pending or self._closing:
            self._rearm()
            return
        self._wake_pending = False
        if _store_down(self._journal.store):
            # Nothing could be journaled: the input stays queued until the
            # Runtime resumes the agent once the store has recovered.
            self._update_settled()
            self._rearm()
            return
        if not self.inbox and not self._continue:
            self._update_settled()
            self._rearm()
            return
        self._set_phase("running")
        # Made here, not in its task: a cancel that arrives before the task
        # first runs must find the activity to cancel.
        error: str | None
        try:
            activity = self._activity = Activity(self._ports(), continuing=self._continue)
            self._continue = False
        except Exception as exc:
            log.exception("agent %s: the activity could not be made", self.id)
            activity, error = None, f"{type(exc).__name__}: {exc}"
        else:
            error = None
        self._tasks.start_soon(self._run_activity, activity, error)

    async def _run_activity(self, activity: Activity | None, error: str | None) -> None:
        task = trio.lowlevel.current_task()
        self._owned.add(task)
        try:
            await self._activity_body(activity, error)
        finally:
            self._owned.discard(task)

    async def _activity_body(self, activity: Activity | None, error: str | None) -> None:
        try:
            if activity is None:
                raise RuntimeError(error)
            result = await activity.execute()
        except Exception as exc:
            # A bug outside the activity's own guard: the run ends as an
            # error and the journal is repaired, as after a crash.
            log.exception("agent %s: activity failed", self.id)
            result = _unhandled("error", f"{type(exc).__name__}: {exc}")
            with trio.CancelScope(shield=True):
                try:
                    await repair(self._journal)
                except Exception:
                    log.exception("agent %s: the journal could not be repaired", self.id)
        finally:
            self._activity = None
        # Each prompt gets the result of the turn that answered it, once the
        # whole activity (and its agent_end event) is over.
        claimed = activity.claimed if activity is not None else ()
        answers = activity.answers if activity is not None else {}
        for queued in claimed:
            if waiter := self._waiters.pop(queued.id, None):
                waiter.resolve(answers.get(queued.id, result))
        stalled = result.stop_reason == "error" and not claimed
        if stalled:
            # It failed before taking any input in: another activity would
            # fail the same way at once, and again. The input stays queued
            # (durable) until new input or ``resume`` wakes the agent; the
            # runs waiting for it end with the error instead of waiting.
            for waiter in self._waiters.values():
                waiter.resolve(result)
            self._waiters.clear()
        self._set_phase("idle")
        if (
            result.stop_reason == "error"
            and self.spec.restart == "on_crash"
            and not await self._crashed(result.error or "the run failed")
        ):
            self._failed = result.error
            self._closing = True
            self._mailbox.close()  # the actor's loop ends, and with it the agent
            return
        # Follow-ups left behind by a stopped run still deserve their turn;
        # after an abort they wait for the next wake-up.
        if result.stop_reason != "aborted" and self._state.next_turn and not stalled:
            self._wake()
        self._start_if_woken()

    def _ports(self) -> ActivityPorts:
        return ActivityPorts(
            agent_id=self.id,
            session_id=self.session_id,
            spec=self.spec,
            tools=self.tools,
            journal=self._journal,
            inbox=self.inbox,
            emit=self._bus.emit,
            ask=self._ask,
            start_worker=self._start_worker,
            start_actor=self._tasks.start_soon,
            spawn_child=self._spawn_child,
            handle=self,
            on_failure=self._on_failure,
            prices=getattr(self._runtime, "prices", BUILTIN_PRICES).merged(self.spec.prices),
        )

    def _on_failure(self, input_id: str | None) -> str:
        waiter = self._waiters.get(input_id) if input_id is not None else None
        return waiter.on_failure if waiter is not None and waiter.on_failure else self.spec.on_failure

    def _start_worker(self, call_id: str, worker: Callable[[], Awaitable[None]]) -> None:
        self._tasks.start_soon(self._supervise_worker, call_id, worker)

    async def _supervise_worker(self, call_id: str, worker: Callable[[], Awaitable[None]]) -> None:
        self._workers[call_id] = None
        try:
            await worker()
        finally:
            self._workers.pop(call_id, None)
            self._rearm()

    @asynccontextmanager
    async def _spawn_child(self, spec: AgentSpec, setup: Setup | None = None) -> AsyncIterator[Agent]:
        """A child agent for the length of the block, its events forwarded on
        this agent's stream as ``child_event``; disposed when the block ends."""
        child = await self._runtime.create(spec, parent=self, setup=setup)
        try:
            async with trio.open_nursery() as forwarding:
                await forwarding.start(self._forward, child)
                try:
                    yield child
                except BaseException:
                    with trio.CancelScope(shield=True):
                        await child.cancel("parent")
                    raise
                finally:
                    with trio.CancelScope(shield=True):
                        # The subscription ends; the forwarder drains it and returns.
                        await child.dispose()
        finally:
            with trio.CancelScope(shield=True):
                await child.dispose()  # at once if it already is

    async def _forward(self, child: Agent, *, task_status: trio.TaskStatus[None]) -> None:
        # Shielded: a cancelled caller still forwards what its child says
        # while it winds down; the child's disposal ends the subscription.
        with trio.CancelScope(shield=True):
            async with child.subscribe() as events:
                task_status.started()
                async for event in events:
                    path, names = [child.id], [child.spec.name]
                    if isinstance(event, ChildEvent):
                        path, names, event = path + event.path, names + event.names, event.event
                    self._bus.emit(ChildEvent, child_id=child.id, path=path, names=names, event=event)

    @property
    def children_nursery(self) -> trio.Nursery:
        """Where this agent's children run (for the Runtime), while it is awake."""
        if self._nursery is None or self._closing:
            raise AgentDisposed(f"agent {self.id} is not running")
        return self._nursery

    def _check_hosting(self) -> None:
        """Raise ``AgentDisposed`` once this agent takes no new children (it
        is being disposed), awake or hibernating."""
        if self._closing or self._disposing:
            raise AgentDisposed(f"agent {self.id} is not running")

    # -- failure and restart ---------------------------------------------------

    async def _crashed(self, error: str) -> bool:
        """The agent failed (``error`` says how): journal it, tell
        subscribers, then restore it from the journal (``on_crash``, within
        the restart intensity). Returns whether the agent carries on."""
        log.error("agent %s failed: %s", self.id, error)
        restart = (
            self._intensity is not None and not self._closing and self._intensity.admit(trio.current_time())
        )
        with trio.CancelScope(shield=True):
            try:
                await self._journal.append(ActorFailed(error, restarted=restart))
            except Exception:
                log.exception("agent %s: the failure could not be journaled", self.id)
        self._bus.emit(AgentFailed, error=error, restarted=restart, escalated=not restart)
        self._announce(AgentFailed, error=error, restarted=restart, escalated=not restart)
        if restart:
            await self._restore()
            self._announce(AgentRestarted)
        return restart

    def _announce(self, event_type: type[Event], **fields: Any) -> None:
        """Tell the runtime's stream (``Runtime.subscribe``)."""
        self._runtime.registry.events.emit(event_type, self, **fields)

    async def _restore(self) -> None:
        """Rebuild the agent's state from its journal, with crash repair."""
        loaded = await self._journal.store.load_state(self.session_id)
        journal = Journal(
            self._journal.store, self.session_id, loaded.state, unsnapshotted=loaded.unsnapshotted
        )
        self._attach(journal)
        await repair(journal)
        if self._state.next_turn or self._state.next_step:
            self._wake()

    def _tell_store(self, error: str | None) -> None:
        """Tell subscribers that the store failed (``error``), or recovered."""
        if self._bus_or_none is None:
            return  # nobody has listened (a hibernating agent)
        if error is None:
            self._bus.emit(StoreRecovered)
        else:
            self._bus.emit(StoreFailed, error=error)

    def _fail_for_good(self, exc: Exception) -> None:
        if isinstance(exc, AgentStoppedForGood):
            self._failed = str(exc)  # already journaled and reported
        else:
            self._failed = f"{type(exc).__name__}: {exc}"
            log.error("agent %s failed for good", self.id, exc_info=exc)
            self._bus.emit(AgentFailed, error=self._failed, restarted=False, escalated=True)
            self._announce(AgentFailed, error=self._failed, restarted=False, escalated=True)
        self._closing = True

    def _collect_teardown_error(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        """An error closing the agent's scope is reported by ``dispose``,
        not raised into the Runtime's nursery."""
        if isinstance(exc, Exception) and self._closing:
            self._teardown_errors += (exc,)
            return True
        return False

    def _close_handle(self) -> None:
        self._closing = True
        if not self._asleep:  # (a hibernating agent has no mailbox and no waiters)
            self._mailbox.close()
            stop: RunStopReason = "error" if self._failed else "aborted"
            for waiter in self._waiters.values():
                waiter.resolve(_unhandled(stop, self._failed))
            self._waiters.clear()
        self._phase, self._wake_pending = "idle", False
        self._update_settled()
        if self._bus_or_none is not None:
            self._bus_or_none.close()
        self._ended = True
        if self._stop_event is not None:
            self._stop_event.set()
        if self._transition is not None:  # (a wake-up that never served)
            self._transition.set()
            self._transition = None

    # -- phases ---------------------------------------------------------------

    @property
    def _busy(self) -> bool:
        return self._phase != "idle" or self._wake_pending

    def _set_phase(self, phase: Literal["idle", "maintenance", "running"]) -> None:
        running = self._phase == "running"
        self._phase = phase
        self._update_settled()
        if running != (phase == "running"):
            self._bus.emit(Status, status="running" if phase == "running" else "idle")

    def _update_settled(self) -> None:
        """Keep ``_settled`` an unset event exactly while the agent is busy."""
        if self._busy:
            if self._settled is None:
                self._settled = trio.Event()
        elif self._settled is not None:
            self._settled.set()
            self._settled = None

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
                if waiter := self._waiters.pop(queued.id, None):
                    waiter.resolve(_unhandled("aborted"))

    def _check_open(self) -> None:
        if self._closing or self._disposing:
            raise AgentDisposed(f"agent {self.id} is disposed")

    def _check_not_in_setup(self) -> None:
        """Setup composes the agent but never drives it (dsh 7.1): from its
        task, a call that needs the actor (which serves only after setup)
        would wait for good."""
        if self._starting is not None and trio.lowlevel.current_task() in self._owned:
            raise RuntimeError(
                f"agent {self.id}: setup may compose the agent (tools, scope, listeners) but not drive "
                "it; send input, cancel or maintain it once create() has returned"
            )


def _store_down(store: object) -> bool:
    """Whether the store has failed and not recovered yet (a store that
    cannot fail has no ``failed`` event)."""
    failed = getattr(store, "failed", None)
    return isinstance(failed, trio.Event) and failed.is_set()


async def dispose_in_order(agents: Iterable[Agent]) -> list[Exception]:
    """Dispose ``agents`` one after another, in the order given, as
    ``Agent.dispose`` does; return the errors instead of raising them.

    A run of agents with nothing to stop (idle, without children, without a
    setup scope whose closing order could matter) is disposed together:
    their mailboxes close in order, their actors end in the same passes of
    the scheduler, and they are detached in order, before the next agent's
    dispose begins. Leaving a Runtime of many idle agents so costs a few
    rounds of the scheduler, not a few per agent.
    """
    errors: list[Exception] = []
    closing: list[Agent] = []
    for agent in agents:
        if not agent._disposing and not agent._scoped and agent._has_nothing_to_stop():
            agent._disposing = True
            if agent._asleep:
                agent._close_handle()  # (nothing to wake it for)
            else:
                agent._mailbox.close()
            closing.append(agent)
            continue
        errors += await _closed(closing)
        closing = []
        try:
            await agent.dispose()
        except Exception as exc:  # noqa: BLE001 - every agent is disposed; the errors are collected
            errors.append(exc)
    errors += await _closed(closing)
    return errors


async def _closed(agents: list[Agent]) -> list[Exception]:
    """The end of ``dispose`` for agents whose mailboxes were closed."""
    try:
        for agent in agents:
            if not agent._ended:  # (waiting on a set event costs a round of the scheduler)
                await agent._stopped.wait()
    finally:
        if agents:
            await agents[0]._runtime.detach(*agents)
    return [error for agent in agents if (error := agent._teardown_error([])) is not None]


class AgentStoppedForGood(Exception):
    """Raised inside the actor when a failure is past restarting."""


class RunStream:
    """The events of one ``stream(prompt)``, then its ``result``."""

    def __init__(self, events: Subscription, waiter: _RunWaiter) -> None:
        self._events = events
        self._waiter = waiter
        self._ended = False

    @property
    def result(self) -> RunResult | None:
        """The prompt's ``RunResult`` once the stream has ended, else None."""
        return self._waiter.result if self._ended else None

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> Event:
        if self._ended:
            raise StopAsyncIteration
        try:
            event = await self._events.receive()
        except trio.EndOfChannel:
            await self._waiter.done.wait()  # the agent stopped: its waiters are answered
            self._ended = True
            raise StopAsyncIteration from None
        # The activity that answered the prompt resolves it right after
        # emitting its agent_end, before any reader can see that event.
        if event.type == "agent_end" and self._waiter.done.is_set():
            self._ended = True
        return event


def _check_target(target: str) -> Target:
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    return target
