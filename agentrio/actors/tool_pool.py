"""Running one assistant message's tool calls."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from .. import _callbacks, tracing
from ..events import SandboxDenied, ToolAbandoned, ToolExecutionUpdate
from ..initiator import Initiator, with_initiator
from ..journal.records import ToolCallFinished, ToolCallStarted
from ..mailbox.waiter import Waiter
from ..messages import (
    PERMISSION_DENIED,
    TOOL_ABORTED,
    TOOL_FAILED,
    TOOL_INPUT_INVALID,
    TOOL_NOT_FOUND,
    TOOL_NOT_STARTED,
    Text,
    ToolCall,
    ToolResultMessage,
    Usage,
    error_result,
)
from ..tools import Tool, ToolContext
from ..tools.middleware import run_tool_call
from ..tools.permissions import decide
from ..tools.process import DEFAULT_GRACE
from .hook_chain import listeners
from .ports import ActivityPorts
from .spec import PostTool, RunStopReason

#: How long a cancelled batch waits for its workers to end: a supervised
#: process's TERM-to-KILL grace. By then every process tool is stopped (one
#: that ignored TERM is being killed); a worker still running (a thread
#: blocked in C) cannot be stopped by waiting longer, so it is reported
#: abandoned and the abort goes on while the agent's nursery still
#: supervises it (jai-mono: an abort is never held up by a tool).
ABANDON_AFTER = DEFAULT_GRACE


#: The result text of a call abandoned while still running.
TOOL_ABANDONED = "TOOL_ABANDONED"


def _error(call: ToolCall, code: str, text: str) -> ToolResultMessage:
    return ToolResultMessage(call.id, call.name, [Text(text)], is_error=True, error_code=code)


@attrs.define(eq=False)
class Slot:
    """One call of the batch, from validation to commit."""

    call: ToolCall
    tool: Tool | None = None
    #: Set once the outcome is known; committed when every earlier slot is.
    result: ToolResultMessage | None = None
    concludes_turn: bool = False
    #: Deferred context the tool gave with its result.
    context: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    scope: trio.CancelScope | None = None
    #: Usage the call spent on the run's behalf (a sub-agent's, say), if any.
    usage: Usage | None = None
    #: The worker has reported back (with a result or after a cancel).
    ended: bool = False
    #: Journaled as finished ahead of its turn to be committed.
    recorded: bool = False
    committed: bool = False
    #: The ``post_tool`` hook has seen the result.
    posted: bool = False

    def add_usage(self, usage: Usage) -> None:
        self.usage = usage if self.usage is None else self.usage + usage

    @property
    def duration(self) -> float:
        if self.started_at is None or self.finished_at is None:
            return 0.0
        return self.finished_at - self.started_at


@attrs.frozen
class BatchPorts:
    """What a tool batch may touch: its agent's ports, and the few things it
    does through its activity."""

    agent: ActivityPorts
    #: Enter a state of the step machine (``Activity.state``).
    state: Callable[[str], None]
    #: Journal records, after the transitions entered (``Activity.append``).
    append: Callable[..., Awaitable[None]]
    tool_started: Callable[[ToolCall, str | None], None]
    commit_result: Callable[[ToolCall, ToolResultMessage, float], Awaitable[None]]
    add_usage: Callable[[Usage], None]
    #: Tool calls the run has started so far, and a way to count more.
    calls_so_far: Callable[[], int]
    count_calls: Callable[[int], None]


class ToolBatch:
    """One assistant message's tool calls, from validation to commit.

    Calls are validated, then checked for permission and dispatched in model
    order: a call starts as soon as its own check passes, while a later
    call's check (a person's approval, say) is still pending. They run in a
    rolling pool of at most ``max_parallel_tool_calls`` workers; an
    exclusive call is a barrier that waits for everything before it and runs
    alone (with ``Limits(tool_execution="sequential")`` every call is).

    Guarantees: a call is journaled as started, durably, before its body
    runs. A result is durable the moment it finishes (committed if every
    earlier call is in, else recorded as finished), unless a ``post_tool``
    hook must see it first: the hook sees results, and they are journaled,
    in model order. Results reach history and events strictly in model order. After a cancel, ``settle``
    waits for the workers to end (``ABANDON_AFTER``), so a result says
    ``TOOL_ABORTED`` only for a call that has stopped.
    """

    def __init__(self, ports: BatchPorts, calls: list[ToolCall]) -> None:
        self._ports = ports
        self._agent = ports.agent
        self.slots = [Slot(call) for call in calls]
        self._next_commit = 0
        self._running = 0
        # What workers reported and the batch has not taken yet: each worker
        # reports exactly once, so it holds at most one entry per call. (A
        # list, and a Waiter for the batch's task: a memory channel, or even
        # a parking lot, per batch costs more than the rest of a small
        # batch's bookkeeping.) Only the batch's own task waits on it.
        self._reports: list[tuple[Slot, Any]] = []
        self._reported = Waiter()
        self._settled = False
        self.stop: RunStopReason | None = None
        #: What stopped the run, when a tool did (``ToolFatal``).
        self.error: str | None = None

    # -- validation and permission, in model order ---------------------------

    def _validate(self, slot: Slot) -> None:
        call = slot.call
        tool = self._agent.tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(self._agent.tools)) or "none"
            slot.result = _error(
                call, TOOL_NOT_FOUND, f"unknown tool {call.name!r}; available tools: {available}"
            )
        elif call.raw_arguments is not None:
            slot.result = _error(
                call,
                TOOL_INPUT_INVALID,
                f"invalid arguments for {call.name}: not a JSON object: {call.raw_arguments!r}",
            )
        elif errors := tool.argument_errors(call.arguments):
            slot.result = _error(
                call, TOOL_INPUT_INVALID, f"invalid arguments for {call.name}: " + "; ".join(errors)
            )
        else:
            slot.tool = tool

    async def _check_permission(self, slot: Slot, wave: list[tuple[Slot, Tool]]) -> list[tuple[Slot, Tool]]:
        """Settle ``slot``'s permission; a refusal becomes its result. Before
        a person is asked, the ``wave`` of calls waiting to start is started
        (the wave left to fill is returned), and the answer is awaited while
        the results of running calls are taken as they come."""
        call, policy, tool = slot.call, self._agent.spec.permission, slot.tool
        assert policy is not None and tool is not None  # (checked only then, once validated)
        try:
            decision = await decide(policy, call, tool)
        except Exception as exc:  # noqa: BLE001 - a policy that fails denies the call
            slot.result = _error(
                call, PERMISSION_DENIED, f"permission check failed: {type(exc).__name__}: {exc}"
            )
            return wave
        if decision in ("deny", "deny_and_stop"):
            reason = f": {decision.reason}" if decision.reason else ""
            if decision == "deny_and_stop":
                slot.result = _error(
                    call, PERMISSION_DENIED, f"permission denied by policy, and the run stopped{reason}"
                )
                self.stop = "permission_denied"
            else:
                slot.result = _error(call, PERMISSION_DENIED, f"permission denied by policy{reason}")
        elif decision == "ask":
            await self._start(wave, "parallel")
            wave = []
            await self._ask(slot, decision.reason)
        return wave

    async def _ask(self, slot: Slot, why: str | None) -> None:
        call = slot.call
        assert slot.tool is not None  # (validated)
        approval = await self._while_receiving(functools.partial(self._agent.ask, call, slot.tool, why))
        tracing.event("agentrio.approval", **{"gen_ai.tool.call.id": call.id, "decision": approval.decision})
        reason = f": {approval.reason}" if approval.reason else ""
        if approval.decision == "deny":
            slot.result = _error(call, PERMISSION_DENIED, f"permission denied by the user{reason}")
        elif approval.decision == "deny_and_stop":
            slot.result = _error(
                call, PERMISSION_DENIED, f"permission denied by the user, and the run stopped{reason}"
            )
            self.stop = "permission_denied"

    async def _while_receiving(self, wait: Callable[[], Awaitable[Any]]) -> Any:
        """``await wait()``, taking (and making durable) the results of the
        running calls meanwhile, as a full pool does."""
        answer: list[Any] = []

        async def waiting() -> None:
            answer.append(await wait())
            self._reported.wake()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiting)
            while not answer:
                if self._reports:
                    await self._receive_one()
                else:
                    await self._reported.wait()
        return answer[0]

    # -- execution ------------------------------------------------------------

    async def run(self) -> RunStopReason | None:
        """Run the batch; returns the turn's outcome: None when the model is
        owed another request, else a stop reason."""
        state = self._ports.state
        state("validate_tools")
        for slot in self.slots:
            self._validate(slot)
        # Checks and dispatch interleave (see ``_execute``); the machine
        # still names both states.
        state("check_permission")
        state("execute_tools")
        try:
            await self._execute()
        finally:
            # Only left early by a cancel or a failure: stop the workers; the
            # activity settles their slots.
            for slot in self.slots:
                if slot.scope is not None and slot.result is None:
                    slot.scope.cancel()
        state("append_results")
        if any(slot.result is not None and slot.result.is_error for slot in self.slots):  # (all have one)
            state("recover")
        if self.stop:
            return self.stop
        return "completed" if any(slot.concludes_turn for slot in self.slots) else None

    async def _execute(self) -> None:
        """Check and dispatch the calls in model order: each call is checked
        (a person asked, if the policy says so) just before it is dispatched,
        so the calls before it run meanwhile and a call never waits for the
        check of a later one."""
        limits = self._agent.spec.limits
        checked = self._agent.spec.permission is not None
        wave: list[tuple[Slot, Tool]] = []  # parallel calls that start together
        for slot in self.slots:
            if self._stopped_before(slot) or slot.result is not None:
                continue
            if (
                limits.max_tool_calls is not None
                and self._ports.calls_so_far() + len(wave) >= limits.max_tool_calls
            ):
                self.stop = "max_tool_calls"
                slot.result = error_result(
                    slot.call,
                    TOOL_NOT_STARTED,
                    f"the run reached its limit of {limits.max_tool_calls} tool calls.",
                )
                continue
            if checked:
                wave = await self._check_permission(slot, wave)
                if slot.result is not None:
                    continue
            # Re-read the live definition: a tool may have been replaced,
            # removed or become exclusive since the batch began.
            tool = self._agent.tools.get(slot.call.name)
            if tool is None:
                slot.result = _error(
                    slot.call,
                    TOOL_NOT_FOUND,
                    f"the tool {slot.call.name!r} was removed before this call started",
                )
                continue
            try:
                mode = tool.mode_for(slot.call.arguments)
            except Exception as exc:  # noqa: BLE001 - user code: its failure is the call's error result
                slot.result = _error(
                    slot.call, TOOL_FAILED, f"execution mode failed: {type(exc).__name__}: {exc}"
                )
                continue
            if mode == "exclusive" or limits.tool_execution == "sequential":
                await self._start(wave, "parallel")
                wave = []
                await self._drain()
                # Every earlier result must be durable before a side effect.
                await self._agent.journal.sync()
                if not self._stopped_before(slot):  # what finished meanwhile may have stopped the run
                    await self._start([(slot, tool)], "exclusive")
                    await self._drain()
                continue
            if self._running + len(wave) >= limits.max_parallel_tool_calls:
                await self._start(wave, "parallel")
                wave = []
                while self._running >= limits.max_parallel_tool_calls:
                    await self._receive_one()
                    await self._commit_ready()
                if self._stopped_before(slot):
                    continue
            wave.append((slot, tool))
        await self._start(wave, "parallel")
        await self._drain()

    def _stopped_before(self, slot: Slot) -> bool:
        """If the run has stopped, ``slot`` never starts: it gets its result now."""
        if self.stop and slot.result is None:
            slot.result = error_result(
                slot.call, TOOL_NOT_STARTED, f"the run stopped ({self.stop}) before this call."
            )
            return True
        return False

    async def _drain(self) -> None:
        while self._running:
            await self._receive_one()
        await self._commit_ready()

    async def _start(self, calls: list[tuple[Slot, Tool]], mode: str) -> None:
        """Dispatch ``calls`` together: their starts are journaled, and made
        durable, in one barrier before any of their bodies runs, so that after
        a crash we know which calls may have had effects."""
        if not calls:
            return
        self._ports.count_calls(len(calls))
        await self._ports.append(*(ToolCallStarted(slot.call.id) for slot, _ in calls))
        await self._agent.journal.sync()
        now = trio.current_time()
        for slot, tool in calls:
            slot.started_at = now
            slot.scope = trio.CancelScope()
            self._ports.tool_started(slot.call, mode)
            self._running += 1
            self._agent.start_worker(slot.call.id, functools.partial(self._worker, slot, tool))

    async def _worker(self, slot: Slot, tool: Tool) -> None:
        agent = self._agent
        ctx = ToolContext(
            agent.agent_id,
            agent.session_id,
            slot.call.id,
            tool.name,
            report=functools.partial(self._report, slot),
            spawn_child=agent.spawn_child,
            add_usage=slot.add_usage,
            on_denied=functools.partial(self._denied, slot),
        )
        outcome = None
        assert slot.scope is not None  # (set as the call starts)
        try:
            with (
                slot.scope,
                with_initiator(Initiator(agent.agent_id, slot.call.id)),
                tracing.tool_span(slot.call, agent.session_id) as span,
            ):
                outcome = await run_tool_call(
                    tool, slot.call, slot.call.arguments, agent.spec.middleware, ctx
                )
                span.finished(outcome)
        finally:
            # Reported even when cancelled from outside, so nobody waits for
            # a worker that has ended (unless the batch was settled without it).
            if not self._settled:
                self._reports.append((slot, outcome))
                self._reported.wake()

    def _report(self, slot: Slot, progress: Any) -> None:
        if not slot.committed:
            self._agent.emit(
                ToolExecutionUpdate,
                tool_call_id=slot.call.id,
                tool_name=slot.call.name,
                progress=progress,
            )

    def _denied(self, slot: Slot, kind: str, target: str | None, line: str) -> None:
        if not slot.committed:
            self._agent.emit(
                SandboxDenied,
                tool_call_id=slot.call.id,
                tool_name=slot.call.name,
                kind=kind,
                target=target,
                line=line,
            )

    async def _receive_one(self) -> None:
        """Wait for a worker to end, take every other that ended meanwhile,
        and make their results durable in one barrier: committed when every
        earlier call is in, recorded as finished otherwise."""
        if self._reports:
            await trio.lowlevel.checkpoint_if_cancelled()
        while not self._reports:
            await self._reported.wait()
        reports, self._reports = self._reports, []
        now = trio.current_time()
        for slot, outcome in reports:
            self._take(slot, outcome, now)
        await self._commit_ready()
        hooks = self._agent.spec.hooks
        if hooks is None or hooks.post_tool is None:
            # Without a post_tool hook a result is durable the moment it
            # finishes; with one, the hook sees each result, and it is
            # journaled, in model order (dsh 7.9), at its commit.
            early = [
                s
                for s in self.slots
                if s.ended and s.result is not None and not s.committed and not s.recorded
            ]
            for slot in early:
                slot.recorded = True
            if early:
                await self._ports.append(*(ToolCallFinished(r) for s in early if (r := s.result) is not None))
        await self._agent.journal.sync()

    def _take(self, slot: Slot, outcome: Any, now: float) -> None:
        self._running -= 1
        slot.ended = True
        slot.finished_at = now
        if slot.usage is not None:
            self._ports.add_usage(slot.usage)
        if outcome is not None:  # None: the worker was cancelled
            slot.result = outcome.to_message(slot.call.id, slot.call.name)
            slot.concludes_turn = outcome.concludes_turn
            slot.context = outcome.context
            if outcome.fatal and not self.stop:
                self.stop = "tool_error"  # no further call starts
                self.error = f"{slot.call.name}: {slot.result.text}"

    async def _commit_ready(self) -> None:
        hooks = self._agent.spec.hooks
        while self._next_commit < len(self.slots) and self.slots[self._next_commit].result is not None:
            slot = self.slots[self._next_commit]
            self._next_commit += 1
            if hooks is not None and hooks.post_tool is not None:
                await self._post(slot)
            slot.committed = True
            assert slot.result is not None  # (the hook may replace it, never remove it)
            await self._ports.commit_result(slot.call, slot.result, slot.duration)
            if slot.context:
                await self._agent.inbox.put(slot.context, "next_step")

    async def _post(self, slot: Slot) -> None:
        """Let the ``post_tool`` hook see (and replace) ``slot``'s result, once."""
        hooks = self._agent.spec.hooks
        if slot.posted or hooks is None or hooks.post_tool is None:
            return
        slot.posted = True
        call = slot.call
        # A waterfall: each listener sees the result the one before left.
        for listener in listeners(hooks.post_tool):
            assert slot.result is not None  # (posted once settled)
            try:
                replaced = await _callbacks.call(listener, PostTool(self._agent.handle, call, slot.result))
            except Exception as exc:  # noqa: BLE001 - user code: its failure is the call's error result
                replaced = _error(
                    call, TOOL_FAILED, f"the post_tool hook failed: {type(exc).__name__}: {exc}"
                )
            if replaced is None:
                continue
            if not isinstance(replaced, ToolResultMessage):
                replaced = _error(
                    call,
                    TOOL_FAILED,
                    f"the post_tool hook returned {type(replaced).__name__}, not a ToolResultMessage",
                )
            # A replacement answers this call, whatever ids it was given.
            slot.result = attrs.evolve(replaced, tool_call_id=call.id, tool_name=call.name)

    async def settle(self) -> dict[str, tuple[ToolResultMessage, float]]:
        """After a cancel or a failure: wait for the cancelled workers to end,
        then return a result, with how long the call ran, for every call not
        yet committed that was dispatched: its own when it finished,
        ``TOOL_ABORTED`` when it stopped without one, ``TOOL_ABANDONED`` (and
        a ``tool_abandoned`` event) for a worker still running after
        ``ABANDON_AFTER``, which the agent's nursery goes on supervising."""
        with trio.move_on_after(ABANDON_AFTER):
            while self._running:
                await self._receive_one()
        self._settled = True
        known = {}
        for slot in self.slots:
            if slot.committed:
                continue
            if slot.result is not None:
                with trio.move_on_after(ABANDON_AFTER) as waited:
                    await self._post(slot)
                if waited.cancelled_caught:  # never commit what the hook may have meant to remove
                    slot.result = _error(
                        slot.call, TOOL_FAILED, "the post_tool hook did not finish; the result was withheld"
                    )
                known[slot.call.id] = slot.result, slot.duration
            elif slot.scope is not None and not slot.ended and slot.started_at is not None:
                self._agent.emit(ToolAbandoned, tool_call_id=slot.call.id, tool_name=slot.call.name)
                abandoned = error_result(
                    slot.call,
                    TOOL_ABANDONED,
                    "the call was cancelled but did not stop; it was abandoned while still "
                    "running, so its effects may still be happening.",
                )
                known[slot.call.id] = abandoned, trio.current_time() - slot.started_at
            elif slot.scope is not None:
                known[slot.call.id] = error_result(slot.call, TOOL_ABORTED), slot.duration
        return known
