"""Crash repair: closing what a crashed run left open in its journal."""

from __future__ import annotations

from ..messages import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, Message, ToolResultMessage, error_result
from .journal import Journal
from .projection import SessionState
from .records import MessageAppended, StepEnded, TurnEnded

#: The cancel cause of a turn that crash repair closed: its input was taken
#: in but not answered, and a runtime that serves the session (``rt.serve``)
#: runs the turn on to its end.
CRASH = "crash"


def closing_results(state: SessionState) -> list[ToolResultMessage]:
    """The results repair gives the open step's unanswered calls: a call
    whose result was recorded when it finished gets that result; the others
    are answered conservatively. A call recorded as started may have had
    effects (``TOOL_OUTCOME_UNKNOWN``); one never started had none
    (``TOOL_NOT_STARTED``)."""
    results = []
    for call in state.open_calls():
        result = state.finished_results.get(call.id)
        if result is None:
            code = TOOL_OUTCOME_UNKNOWN if call.id in state.started_calls else TOOL_NOT_STARTED
            result = error_result(call, code)
        results.append(result)
    return results


def repaired_history(state: SessionState) -> list[Message]:
    """History as ``repair`` would leave it, without writing anything."""
    if not state.step_open:
        return list(state.messages)
    return [*state.messages, *state.step_messages, *closing_results(state)]


async def repair(journal: Journal) -> bool:
    """Answer every call of an open step (``closing_results``), then end the
    step and the turn. Returns whether anything was repaired."""
    state = journal.state
    if not (state.step_open or state.turn_open):
        return False
    if state.step_open:
        for result in closing_results(state):
            await journal.append(MessageAppended(result))
        await journal.append(StepEnded(state.step))
    if state.turn_open:
        await journal.append(TurnEnded(state.turn, "aborted", CRASH))
    await journal.sync()
    return True
