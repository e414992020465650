"""Running one assistant message's tool calls.

Calls are validated and checked for permission in model order, then run in
a rolling pool of at most ``max_parallel_tool_calls`` workers; an exclusive
call is a barrier that waits for everything before it and runs alone. However
calls finish, results are committed strictly in model order.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

import attrs
import trio

from .._ids import new_id
from ..events import ApprovalRequest, ToolExecutionUpdate
from ..initiator import Initiator, with_initiator
from ..journal.records import ToolCallStarted
from ..messages import TOOL_NOT_STARTED, Text, ToolCall, ToolResultMessage, error_result
from ..tools import Tool, ToolContext
from ..tools.middleware import run_tool_call
from ..tools.permissions import decide, summarize_call

if TYPE_CHECKING:
    from .activity import Activity

#: How long a cancelled batch waits for its workers before abandoning them
#: to the agent's supervisor.
ABANDON_AFTER = 1.0

APPROVAL_DECISIONS = ("approve", "deny", "deny_and_stop")


def _error(call: ToolCall, text: str) -> ToolResultMessage:
    return ToolResultMessage(call.id, call.name, [Text(text)], is_error=True)


@attrs.define(eq=False)
class Slot:
    """One call of the batch, from validation to commit."""

    call: ToolCall
    tool: Tool | None = None
    #: Set once the outcome is known; committed when every earlier slot is.
    result: ToolResultMessage | None = None
    concludes_turn: bool = False
    started_at: float | None = None
    finished_at: float | None = None
    scope: trio.CancelScope | None = None
    committed: bool = False

    @property
    def duration(self) -> float:
        if self.started_at is None or self.finished_at is None:
            return 0.0
        return self.finished_at - self.started_at


@attrs.define(eq=False)
class Approval:
    """A pending ``ask``: the answer arrives through ``Agent.answer``."""

    answered: trio.Event = attrs.field(factory=trio.Event)
    decision: str = ""
    reason: str | None = None


class ToolBatch:
    def __init__(self, activity: Activity, calls: list[ToolCall]) -> None:
        self._activity = activity
        self._agent = activity.agent
        self.slots = [Slot(call) for call in calls]
        self._next_commit = 0
        self._running = 0
        self._send, self._finished = trio.open_memory_channel[tuple[Slot, Any]](math.inf)
        self.stop: str | None = None

    # -- validation and permission, in model order ---------------------------

    def _validate(self, slot: Slot) -> None:
        call = slot.call
        tool = self._agent.tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(self._agent.tools)) or "none"
            slot.result = _error(call, f"unknown tool {call.name!r}; available tools: {available}")
        elif call.raw_arguments is not None:
            slot.result = _error(
                call, f"invalid arguments for {call.name}: not a JSON object: {call.raw_arguments!r}"
            )
        elif errors := tool.argument_errors(call.arguments):
            slot.result = _error(call, f"invalid arguments for {call.name}: " + "; ".join(errors))
        else:
            slot.tool = tool

    async def _check_permission(self, slot: Slot) -> None:
        policy = self._agent.spec.permission
        if policy is None or slot.result is not None:
            return
        call = slot.call
        try:
            decision = await decide(policy, call, slot.tool)
        except Exception as exc:
            slot.result = _error(call, f"permission check failed: {type(exc).__name__}: {exc}")
            return
        if decision == "deny":
            reason = f": {decision.reason}" if decision.reason else ""
            slot.result = _error(call, f"permission denied by policy{reason}")
        elif decision == "ask":
            await self._ask(slot, decision.reason)

    async def _ask(self, slot: Slot, why: str | None) -> None:
        call = slot.call
        request_id = new_id("approval")
        approval = self._agent._approvals[request_id] = Approval()
        try:
            self._activity.emit(
                ApprovalRequest,
                request_id=request_id,
                call=call,
                tool_name=call.name,
                summary=await summarize_call(call, slot.tool),
                reason=why,
            )
            await approval.answered.wait()
        finally:
            del self._agent._approvals[request_id]
        reason = f": {approval.reason}" if approval.reason else ""
        if approval.decision == "deny":
            slot.result = _error(call, f"permission denied by the user{reason}")
        elif approval.decision == "deny_and_stop":
            slot.result = _error(call, f"permission denied by the user, and the run stopped{reason}")
            self.stop = "permission_denied"

    # -- execution ------------------------------------------------------------

    async def run(self) -> str | None:
        """Run the batch; returns the turn's outcome: None when the model is
        owed another request, else a stop reason."""
        activity = self._activity
        activity.state("validate_tools")
        for slot in self.slots:
            self._validate(slot)
        activity.state("check_permission")
        for slot in self.slots:
            await self._check_permission(slot)
            if self.stop:
                break
        activity.state("execute_tools")
        try:
            await self._execute()
        finally:
            # Only left early by a cancel or a failure: stop the workers; the
            # activity settles their slots.
            for slot in self.slots:
                if slot.scope is not None and slot.result is None:
                    slot.scope.cancel()
        activity.state("append_results")
        if any(slot.result.is_error for slot in self.slots):
            activity.state("recover")
        if self.stop:
            return self.stop
        return "completed" if any(slot.concludes_turn for slot in self.slots) else None

    async def _execute(self) -> None:
        limits = self._agent.spec.limits
        wave: list[tuple[Slot, Tool]] = []  # parallel calls that start together
        for slot in self.slots:
            if self._stopped_before(slot) or slot.result is not None:
                continue
            if limits.max_tool_calls is not None and self._activity.tool_calls + len(wave) >= limits.max_tool_calls:
                self.stop = "max_tool_calls"
                slot.result = error_result(
                    slot.call,
                    TOOL_NOT_STARTED,
                    f"the run reached its limit of {limits.max_tool_calls} tool calls.",
                )
                continue
            # Re-read the live definition: a tool may have been replaced or
            # become exclusive since the batch began.
            tool = self._agent.tools.get(slot.call.name, slot.tool)
            try:
                mode = tool.mode_for(slot.call.arguments)
            except Exception as exc:
                slot.result = _error(slot.call, f"execution mode failed: {type(exc).__name__}: {exc}")
                continue
            if mode == "exclusive":
                await self._start(wave, "parallel")
                wave = []
                await self._drain()
                # Every earlier result must be durable before a side effect.
                await self._activity.journal.sync()
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
            slot.result = error_result(slot.call, TOOL_NOT_STARTED, f"the run stopped ({self.stop}) before this call.")
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
        activity = self._activity
        activity.tool_calls += len(calls)
        await activity.journal.append(*(ToolCallStarted(slot.call.id) for slot, _ in calls))
        await activity.journal.sync()
        now = trio.current_time()
        for slot, tool in calls:
            slot.started_at = now
            slot.scope = trio.CancelScope()
            activity.tool_started(slot.call, mode)
            self._running += 1
            self._agent._workers.start_soon(self._worker, slot, tool)

    async def _worker(self, slot: Slot, tool: Tool) -> None:
        agent = self._agent
        ctx = ToolContext(
            agent.id,
            agent.session_id,
            slot.call.id,
            tool.name,
            report=functools.partial(self._report, slot),
            agent=agent,
            add_usage=self._activity.add_usage,
        )
        outcome = None
        with slot.scope, with_initiator(Initiator(agent.id, slot.call.id)):
            outcome = await run_tool_call(tool, slot.call, slot.call.arguments, agent.spec.middleware, ctx)
        try:
            self._send.send_nowait((slot, outcome))
        except trio.ClosedResourceError:
            pass  # the batch was settled without this worker

    def _report(self, slot: Slot, progress: Any) -> None:
        if not slot.committed:
            self._activity.emit(
                ToolExecutionUpdate,
                tool_call_id=slot.call.id,
                tool_name=slot.call.name,
                progress=progress,
            )

    async def _receive_one(self) -> None:
        slot, outcome = await self._finished.receive()
        self._running -= 1
        slot.finished_at = trio.current_time()
        if outcome is not None:  # None: the worker was cancelled
            slot.result = outcome.to_message(slot.call.id, slot.call.name)
            slot.concludes_turn = outcome.concludes_turn
            if outcome.fatal and not self.stop:
                self.stop = "tool_error"  # no further call starts

    async def _commit_ready(self) -> None:
        while self._next_commit < len(self.slots) and self.slots[self._next_commit].result is not None:
            slot = self.slots[self._next_commit]
            self._next_commit += 1
            slot.committed = True
            await self._activity.commit_tool_result(slot.call, slot.result, slot.duration)

    async def settle(self) -> dict[str, ToolResultMessage]:
        """After a cancel or a failure: give cancelled workers a moment to
        finish, then return the results known so far (uncommitted ones).
        Workers still running are abandoned to the agent's supervisor."""
        with trio.move_on_after(ABANDON_AFTER):
            while self._running:
                await self._receive_one()
        self._send.close()
        return {
            slot.call.id: slot.result
            for slot in self.slots
            if slot.result is not None and not slot.committed
        }
