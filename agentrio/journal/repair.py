"""Crash repair: closing what a crashed run left open in its journal."""

from __future__ import annotations

from ..messages import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, error_result
from .journal import Journal
from .records import MessageAppended, StepEnded, TurnEnded


async def repair(journal: Journal) -> bool:
    """Answer every call of an open step, then end the step and the turn. A
    call whose result was recorded when it finished gets that result;
    the others are answered conservatively. A call recorded as started may have had effects
    (``TOOL_OUTCOME_UNKNOWN``); one never started had none
    (``TOOL_NOT_STARTED``). Returns whether anything was repaired."""
    state = journal.state
    if not (state.step_open or state.turn_open):
        return False
    if state.step_open:
        for call in state.open_calls():
            result = state.finished_results.get(call.id)
            if result is None:
                code = TOOL_OUTCOME_UNKNOWN if call.id in state.started_calls else TOOL_NOT_STARTED
                result = error_result(call, code)
            await journal.append(MessageAppended(result))
        await journal.append(StepEnded(state.step))
    if state.turn_open:
        await journal.append(TurnEnded(state.turn, "aborted"))
    await journal.sync()
    return True
