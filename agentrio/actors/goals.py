"""Goals: turns that start by themselves until the model says the goal is met.

``Agent.set_goal(text, max_turns=)`` journals a ``GoalSet`` record and
queues the goal as a follow-up. After each turn of the goal, the agent
either ends it (``GoalEnded``: ``met`` when the model's last reply ends with
``GOAL_MET``; ``max_turns`` when the budget is spent; the turn's stop
reason when the turn did not complete) or queues the next turn's prompt
(dsh 7.11: a long-lived goal drives further turns without changing the
loop). The goal lives in the journal, so a restored session knows it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..events import GoalEnd, GoalStart
from ..journal.records import GoalEnded, GoalSet
from ..mailbox import QueuedInput
from ..messages import AssistantMessage, Message, UserMessage

if TYPE_CHECKING:
    from .ports import ActivityPorts

#: What the model writes, as the last line of its reply, once the goal is met.
GOAL_MET = "[goal met]"

GOAL_PROMPT = (
    "Your goal: {text}\n\nWork towards it over as many turns as it takes. When, and only when, "
    "the goal is met, end your reply with the line " + GOAL_MET
)
CONTINUE_PROMPT = (
    "Go on towards the goal: {text}\n(End your reply with the line " + GOAL_MET + " once it is met.)"
)


async def set_goal(ports: ActivityPorts, text: str, max_turns: int | None) -> QueuedInput:
    """Journal the goal, announce it and queue its first turn."""
    await ports.journal.append(GoalSet(text, max_turns))
    ports.emit(GoalStart, text=text, max_turns=max_turns)
    return await ports.inbox.put(UserMessage(GOAL_PROMPT.format(text=text)), "next_turn")


async def after_turn(ports: ActivityPorts, stop: str) -> None:
    """A turn of the goal ended with ``stop``: end the goal or queue its
    next turn."""
    state = ports.journal.state
    reason = None
    if stop != "completed":
        reason = stop
    elif _declares_met(state.messages):
        reason = "met"
    elif state.goal_max_turns is not None and state.goal_turns >= state.goal_max_turns:
        reason = "max_turns"
    if reason is None:
        await ports.inbox.put(UserMessage(CONTINUE_PROMPT.format(text=state.goal)), "next_turn")
        return
    turns = state.goal_turns
    await ports.journal.append(GoalEnded(reason, turns))
    ports.emit(GoalEnd, reason=reason, turns=turns)


def _declares_met(history: list[Message]) -> bool:
    for message in reversed(history):
        if isinstance(message, AssistantMessage):
            return message.text.rstrip().endswith(GOAL_MET)
    return False
