"""An input's outcome is read from the journal: the turn that claimed it
answers it, unless a crash (or a runtime giving the session up) cut that
turn short, and then the turn that continues it does."""

from __future__ import annotations

from agentrio import (
    AgentSpec,
    AssistantMessage,
    MemoryStore,
    Outcome,
    Runtime,
    ScriptedModel,
    Text,
    UserMessage,
)
from agentrio.journal import SessionInfo
from agentrio.journal.outcomes import WITHDRAWN, Outcomes
from agentrio.journal.records import MessageAppended, StepEnded, StepStarted, TurnEnded, TurnStarted
from agentrio.mailbox.items import InboxSpliced, QueuedInput


def sent(*ids: str, start: int = 0) -> InboxSpliced:
    items = [QueuedInput(i, UserMessage(f"prompt {i}")) for i in ids]
    return InboxSpliced("next_turn", start, 0, items, "send")


def claim(count: int = 1) -> InboxSpliced:
    return InboxSpliced("next_turn", 0, count, [], "claim")


def turn(number: int, text: str, *, claimed: int = 1, end: TurnEnded | None = None) -> list:
    return [
        TurnStarted(number),
        claim(claimed) if claimed else None,
        StepStarted(number),
        MessageAppended(UserMessage("prompt")),
        MessageAppended(AssistantMessage([Text(text)])),
        StepEnded(number),
        end or TurnEnded(number, "completed"),
    ]


def outcomes(records: list) -> Outcomes:
    followed = Outcomes()
    followed.feed([r for r in records if r is not None])
    return followed


def test_each_input_is_answered_by_the_turn_that_claimed_it():
    followed = outcomes([sent("a", "b"), *turn(1, "one"), *turn(2, "two")])
    assert followed.answered == {"a": Outcome("completed", "one"), "b": Outcome("completed", "two")}
    assert followed.twice == [] and not followed.unfinished


def test_a_turn_cut_by_a_crash_or_a_release_answers_nothing_until_it_is_continued():
    for cause in ("crash", "released"):
        cut = [sent("a"), TurnStarted(1), claim(), StepStarted(1), MessageAppended(UserMessage("prompt"))]
        cut += [StepEnded(1), TurnEnded(1, "aborted", cause)]
        followed = outcomes(cut)
        assert followed.answered == {} and followed.unfinished
        followed.feed([r for r in turn(2, "done", claimed=0) if r is not None])
        assert followed.answered == {"a": Outcome("completed", "done")} and not followed.unfinished


def test_an_error_and_a_withdrawn_input_are_outcomes_too():
    error = TurnEnded(1, "model_error", None, "ProviderError: overloaded")
    followed = outcomes([sent("a", "b"), *turn(1, "partial", end=error)])
    assert followed.answered == {"a": Outcome("model_error", "partial", "ProviderError: overloaded")}
    followed.feed([InboxSpliced("next_turn", 0, 1, [], "remove")])
    assert followed.answered["b"] == Outcome("aborted", "", WITHDRAWN)


async def test_a_turn_whose_crash_fell_after_its_answer_is_closed_without_a_model_request():
    records = [sent("a"), *turn(1, "the answer")[:-1]]  # no TurnEnded: the crash
    store = MemoryStore()
    await store.create_session(SessionInfo("s1", agent_name="helper"), records)
    model = ScriptedModel([])  # any request would fail the run
    async with Runtime(store) as rt:
        agent = await rt.create(AgentSpec("helper", model), "s1")
        await agent.resume(continue_turn=True)
        await agent.wait_idle()
    assert model.requests == []
    assert outcomes((await store.load_session("s1"))[1]).answered == {"a": Outcome("completed", "the answer")}
