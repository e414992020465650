"""Compaction: a summary replaces the older history when the context fills
up, when the provider overflows, or when asked; and replies cut by the
output limit are continued."""

import json

import pytest
import trio
import trio.testing

from agentrio import (
    AgentSpec,
    AssistantMessage,
    CompactionFailed,
    Limits,
    MemoryStore,
    ProviderError,
    Runtime,
    ScriptedModel,
    SQLiteStore,
    Text,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    tool,
)
from agentrio.actors.compaction import (
    CHARS_PER_TOKEN,
    DEFAULT_COMPACTION_PROMPT,
    SUMMARY_HEADER,
    choose_cut,
    estimate_tokens,
)
from agentrio.actors.continuation import CONTINUE_PROMPT
from agentrio.cli.transcript import transcript
from agentrio.journal import journal as journal_module
from agentrio.journal.fork import fork_session
from agentrio.journal.records import Compacted, MessageAppended
from agentrio.models import Anthropic, request_problems

from .conftest import record
from .helpers import calls, echo_tool, say, start_run

#: 800 characters: 200 tokens by the estimate.
LONG = "x" * 800


def _spec(model, **limits) -> AgentSpec:
    return AgentSpec("a", model, tools=[echo_tool()], limits=Limits(**limits))


def _summary(text: str) -> UserMessage:
    return UserMessage(SUMMARY_HEADER + text)


def _compaction_events(rec) -> list[tuple]:
    return [
        (e.type, e.reason, e.tokens_before)
        + ((e.tokens_after, e.messages_summarized, e.error) if e.type == "compaction_end" else ())
        for e in rec.events
        if e.type.startswith("compaction")
    ]


# -- where to cut ----------------------------------------------------------------


def test_the_cut_never_separates_a_call_from_its_result():
    call = ToolCall("c1", "echo", {"text": LONG})
    history = [
        UserMessage("go"),
        AssistantMessage([call]),
        ToolResultMessage("c1", "echo", [Text(LONG)]),
        AssistantMessage([Text("done")]),
    ]
    # The result alone fits in 300 tokens, the call with it does not: the
    # cut moves past the pair instead of keeping the result without its call.
    assert choose_cut(history, 300) == 3
    # With room for both, the pair is kept whole.
    assert choose_cut(history, 500) == 1


def test_the_cut_summarizes_something_beyond_a_previous_summary():
    history = [_summary("before"), UserMessage("go"), AssistantMessage([Text("ok")])]
    assert choose_cut(history, 10_000, floor=1) == 2
    assert choose_cut(history[:1], 10_000, floor=1) is None
    assert choose_cut([], 10_000) is None


def test_a_cut_inside_unanswered_calls_is_never_chosen():
    call = ToolCall("c1", "echo", {})
    history = [UserMessage("go"), AssistantMessage([call]), ToolResultMessage("c1", "echo", [Text(LONG)])]
    assert choose_cut(history, 1) == 3
    assert choose_cut(history, 10_000) == 1


# -- automatic compaction ----------------------------------------------------------


async def test_passing_the_threshold_compacts_once_then_the_run_goes_on(rt):
    model = ScriptedModel(
        [
            calls(("echo", {"text": LONG}), usage=Usage(300, 20)),
            say("done", usage=Usage(600, 5)),  # 605 of 1000: below 0.8
            say("first summary", usage=Usage(700, 30)),
            say("next answer", usage=Usage(150, 5)),
        ]
    )
    agent = await rt.create(_spec(model, context_window=1000, compact_at=0.8, keep_recent_tokens=100))
    assert (await agent.run("go")).stop_reason == "completed"
    assert len(model.requests) == 2  # no compaction yet
    before = list(agent.messages)
    async with record(agent) as rec:
        result = await agent.run(LONG)  # 605 + 200 estimated: past 800
    assert result.stop_reason == "completed"
    assert rec.types() == [
        "agent_start",
        "turn_start",
        "step_start",
        "message_start",
        "message_end",  # the prompt, admitted first
        "compaction_start",
        "compaction_end",
        "message_start",
        "message_end",  # the answer
        "step_end",
        "turn_end",
        "agent_end",
    ]
    summary = _summary("first summary")
    kept = [summary, before[3], UserMessage(LONG)]  # the last answer fits in 100 tokens
    assert _compaction_events(rec) == [
        ("compaction_start", "threshold", 805),
        ("compaction_end", "threshold", 805, _overhead(agent) + estimate_tokens(kept), 3, None),
    ]
    summary_request = model.requests[2]
    assert summary_request.messages[:-1] == before[:3]
    assert summary_request.messages[-1].text == DEFAULT_COMPACTION_PROMPT
    assert request_problems(summary_request) == []
    assert model.requests[3].messages == kept
    assert [m.text for m in agent.messages] == [summary.text, "done", LONG, "next answer"]
    # The summary's usage counts, for the run and for the session.
    assert result.usage == Usage(150, 5) + Usage(700, 30)
    assert agent.usage == Usage(300, 20) + Usage(600, 5) + result.usage


def _overhead(agent) -> int:
    """The estimate of what every request carries besides history."""
    tools = agent.spec.tools
    chars = len(agent.spec.system_prompt) + sum(
        len(t.name) + len(t.description) + len(json.dumps(t.spec.parameters)) for t in tools
    )
    return chars // CHARS_PER_TOKEN


async def test_history_below_the_threshold_is_never_compacted(rt):
    model = ScriptedModel([say("a", usage=Usage(100, 5)), say("b", usage=Usage(200, 5))])
    agent = await rt.create(_spec(model, context_window=1000, keep_recent_tokens=100))
    async with record(agent) as rec:
        await agent.run("one")
        await agent.run("two")
    assert rec.of("compaction_start") == []
    assert len(model.requests) == 2


# -- overflow recovery -------------------------------------------------------------

OVERFLOW = ProviderError(400, "context_overflow", "prompt is too long")


async def test_an_overflow_compacts_and_retries_the_request_once(rt):
    model = ScriptedModel([say(LONG), OVERFLOW, say("summary"), say("answer")])
    agent = await rt.create(_spec(model, keep_recent_tokens=100))  # no window known: no threshold
    await agent.run("first")
    first = list(agent.messages)
    async with record(agent) as rec:
        result = await agent.run("second")
    assert result.stop_reason == "completed" and result.text == "answer"
    assert rec.types() == [
        "agent_start",
        "turn_start",
        "step_start",
        "message_start",
        "message_end",  # the prompt
        "compaction_start",
        "compaction_end",
        "message_start",
        "message_end",  # the answer to the retried request
        "step_end",
        "turn_end",
        "agent_end",
    ]
    assert [(e.reason, e.messages_summarized, e.error) for e in rec.of("compaction_end")] == [
        ("overflow", 2, None)
    ]
    overflowed, summarized, retried = model.requests[1:]
    assert overflowed.messages == [*first, UserMessage("second")]
    assert summarized.messages[-1].text == DEFAULT_COMPACTION_PROMPT
    assert retried.messages == [_summary("summary"), UserMessage("second")]
    # The refused attempt never entered history.
    assert [m.text for m in agent.messages] == [_summary("summary").text, "second", "answer"]


async def test_a_second_overflow_after_compacting_ends_the_run(rt):
    model = ScriptedModel([say(LONG), OVERFLOW, say("summary"), OVERFLOW])
    agent = await rt.create(_spec(model, keep_recent_tokens=100))
    await agent.run("first")
    async with record(agent) as rec:
        result = await agent.run("second")
    assert result.stop_reason == "context_overflow"
    assert len(rec.of("compaction_start")) == 1 and model.remaining == 0
    # Compacted all the same: the next run starts from the summary.
    assert agent.messages[0] == _summary("summary")


async def test_an_overflow_with_nothing_to_compact_ends_the_run(rt):
    model = ScriptedModel([OVERFLOW])
    agent = await rt.create(_spec(model))
    async with record(agent) as rec:
        result = await agent.run("a single, enormous prompt")
    assert result.stop_reason == "context_overflow"
    assert rec.of("compaction_start") == [] and len(model.requests) == 1


async def test_a_failed_summary_after_an_overflow_leaves_history_unchanged(rt):
    model = ScriptedModel([say(LONG), OVERFLOW, ProviderError(503, "overloaded_error", "busy")])
    agent = await rt.create(_spec(model, keep_recent_tokens=100))
    await agent.run("first")
    before = list(agent.messages)
    async with record(agent) as rec:
        result = await agent.run("second")
    assert result.stop_reason == "context_overflow"
    assert "the summary request failed: HTTP 503 overloaded_error: busy" in result.error
    [end] = rec.of("compaction_end")
    assert end.error.startswith("the summary request failed") and end.tokens_after == end.tokens_before
    assert list(agent.messages[: len(before) + 1]) == [*before, UserMessage("second")]
    _, records = await rt.store.load_session(agent.session_id)
    assert not any(isinstance(r, Compacted) for r in records)


async def test_a_failed_summary_at_the_threshold_stops_the_run_and_says_why(rt):
    model = ScriptedModel([say(LONG, usage=Usage(850, 5)), say("")])  # an empty summary
    agent = await rt.create(_spec(model, context_window=1000, keep_recent_tokens=100))
    await agent.run("first")
    before = list(agent.messages)
    result = await agent.run("second")
    assert result.stop_reason == "compaction_failed"
    assert (
        result.error
        == "the summary request failed: empty_summary: the model gave no summary (stop reason stop)"
    )
    assert list(agent.messages) == [*before, UserMessage("second")]
    assert request_problems(_next(agent)) == []


def _next(agent):
    from agentrio.messages import project_tool_protocol
    from agentrio.models import ModelRequest

    return ModelRequest("", project_tool_protocol([*agent.messages, UserMessage("next")]))


# -- manual compaction ---------------------------------------------------------------


async def test_compact_summarizes_with_extra_instructions_and_the_session_goes_on(rt):
    model = ScriptedModel([calls(("echo", {"text": LONG})), say(LONG), say("the summary"), say("goes on")])
    agent = await rt.create(_spec(model, keep_recent_tokens=100))
    await agent.run("first")
    async with record(agent) as rec:
        outcome = await agent.compact("keep every number")
        await agent.run("second")
    assert outcome.compacted and outcome.tokens_after < outcome.tokens_before
    assert rec.types()[:2] == ["compaction_start", "compaction_end"]
    assert rec.of("compaction_start")[0].reason == "manual"
    prompt = model.requests[2].messages[-1].text
    assert prompt.startswith(DEFAULT_COMPACTION_PROMPT) and prompt.endswith("Also: keep every number")
    # The call and its result went into the summary together.
    assert model.requests[3].messages == [_summary("the summary"), UserMessage("second")]
    assert [m.text for m in agent.messages] == [_summary("the summary").text, "second", "goes on"]


async def test_compact_with_nothing_to_compact_changes_nothing(rt):
    model = ScriptedModel([])
    agent = await rt.create(_spec(model))
    outcome = await agent.compact()
    assert not outcome.compacted and agent.messages == () and model.requests == []


async def test_a_failed_manual_compaction_raises_and_keeps_history(rt):
    model = ScriptedModel([say("hello"), ProviderError(500, "api_error", "boom")])
    agent = await rt.create(_spec(model))
    await agent.run("hi")
    before = agent.messages
    with pytest.raises(CompactionFailed, match="HTTP 500 api_error: boom"):
        await agent.compact()
    assert agent.messages == before


async def test_the_compaction_prompt_can_be_replaced(rt):
    model = ScriptedModel([say("hello"), say("short")])
    spec = AgentSpec("a", model, compaction_prompt="Summarize in one line.")
    agent = await rt.create(spec)
    await agent.run("hi")
    await agent.compact()
    assert model.requests[1].messages[-1] == UserMessage("Summarize in one line.")


# -- restore, fork, journal, snapshots ------------------------------------------------


async def _compacted_session(store) -> tuple[str, list]:
    """A session of two turns, compacted after the first; returns its id and
    its history before the compaction."""
    model = ScriptedModel([calls(("echo", {"text": "a"})), say(LONG), say("sum"), say("after")])
    async with Runtime(store) as rt:
        agent = await rt.create(_spec(model, keep_recent_tokens=100), "s1")
        await agent.run("first")
        full = list(agent.messages)
        await agent.compact()
        await agent.run("second")
    return "s1", full


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_restored_session_has_the_compacted_history_and_the_journal_all_of_it(
    kind, tmp_path, monkeypatch
):
    monkeypatch.setattr(journal_module, "SNAPSHOT_EVERY", 3)  # restores start from a snapshot
    memory = MemoryStore()

    def store():
        return memory if kind == "memory" else SQLiteStore(tmp_path / "s.db")

    session_id, full = await _compacted_session(store())
    async with Runtime(store()) as rt:
        model = ScriptedModel([say("3rd")])
        agent = await rt.create(_spec(model), session_id)
        assert agent.messages[0] == _summary("sum")
        assert [m.text for m in agent.messages[1:]] == ["second", "after"]
        await agent.run("third")
        assert model.requests[0].messages[0] == _summary("sum")
        _, records = await rt.store.load_session(session_id)
    written = [r.message for r in records if isinstance(r, MessageAppended)]
    assert written[: len(full)] == full  # nothing the summary replaced is lost
    assert [m.text for m in written[len(full) :]] == ["second", "after", "third", "3rd"]


async def test_a_fork_after_compaction_starts_from_the_compacted_history():
    store = MemoryStore()
    session_id, full = await _compacted_session(store)
    fork = await fork_session(store, session_id, at_message=2)
    assert fork.state.messages == [_summary("sum"), UserMessage("second")]
    # A turn that ended before the compaction is forked as it was then.
    earlier = await fork_session(store, session_id, at_turn=1)
    assert earlier.state.messages == full


def test_the_transcript_shows_the_summary_and_what_it_replaced():
    from agentrio.journal import SessionInfo
    from agentrio.journal.records import StepEnded, StepStarted, TurnEnded, TurnStarted

    records = [
        TurnStarted(1),
        StepStarted(1),
        MessageAppended(UserMessage("the original question")),
        MessageAppended(AssistantMessage([Text("the original answer")])),
        StepEnded(1),
        TurnEnded(1, "completed"),
        Compacted(_summary("goals: answer the question"), 2, "manual", 120, 30, Usage(50, 10)),
    ]
    lines = list(transcript(SessionInfo("s"), records, full=True))
    text = "\n".join(lines)
    assert "user: the original question" in text and "assistant: the original answer" in text
    assert (
        "--- compacted (manual): the first 2 messages of history replaced by a summary, about 120 -> 30 tokens ---"
        in lines
    )
    assert "goals: answer the question" in text
    assert lines[-1] == "usage: 50 input, 10 output, 0 cache read, 0 cache write tokens"


# -- limits ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, error",
    [
        ({"compact_at": 0}, ValueError),
        ({"compact_at": 1.5}, ValueError),
        ({"compact_at": "high"}, TypeError),
        ({"context_window": 0}, ValueError),
        ({"context_window": 1000, "keep_recent_tokens": 800}, ValueError),
        ({"continue_on_max_tokens": -1}, ValueError),
        ({"continue_on_max_tokens": True}, TypeError),
    ],
)
def test_context_limits_are_checked_when_made(fields, error):
    with pytest.raises(error, match="Limits"):
        Limits(**fields)


# -- replies cut by the output limit ---------------------------------------------------


def _cut(text: str, used: int) -> AssistantMessage:
    return AssistantMessage([Text(text)], stop_reason="max_tokens", usage=Usage(10, used))


async def test_a_cut_text_reply_is_continued_with_a_larger_budget(rt):
    model = ScriptedModel([_cut("Once upon", 100), say(" a time.")])
    agent = await rt.create(_spec(model, continue_on_max_tokens=2, max_output_tokens=1000))
    async with record(agent) as rec:
        result = await agent.run("tell a story")
    assert result.stop_reason == "completed"
    assert [m.role for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert agent.messages[2] == UserMessage(CONTINUE_PROMPT)
    first, continued = model.requests
    assert continued.messages == [*first.messages, agent.messages[1], UserMessage(CONTINUE_PROMPT)]
    assert (first.max_tokens, continued.max_tokens) == (None, 200)
    assert rec.types() == [
        "agent_start",
        "turn_start",
        "step_start",
        "message_start",
        "message_end",  # the prompt
        "message_start",
        "message_end",  # the cut reply
        "message_start",
        "message_end",  # the request to go on
        "message_start",
        "message_end",  # the rest of the reply
        "step_end",
        "turn_end",
        "agent_end",
    ]


async def test_the_raised_budget_doubles_up_to_the_ceiling_and_stays_for_the_run(rt):
    model = ScriptedModel([_cut("a", 100), _cut("b", 200), calls(("echo", {"text": "c"})), say("done")])
    agent = await rt.create(_spec(model, continue_on_max_tokens=5, max_output_tokens=300))
    assert (await agent.run("go")).stop_reason == "completed"
    assert [r.max_tokens for r in model.requests] == [None, 200, 300, 300]


async def test_without_a_ceiling_the_budget_stays_the_adapters(rt):
    model = ScriptedModel([_cut("a", 100), say("b")])
    agent = await rt.create(_spec(model, continue_on_max_tokens=1))
    assert (await agent.run("go")).stop_reason == "completed"
    assert [r.max_tokens for r in model.requests] == [None, None]


async def test_continuations_stop_after_the_limit_and_the_turn_ends_max_tokens(rt):
    model = ScriptedModel([_cut("a", 10), _cut("b", 10)])
    agent = await rt.create(_spec(model, continue_on_max_tokens=1))
    result = await agent.run("go")
    assert result.stop_reason == "max_tokens"
    assert len(model.requests) == 2 and model.remaining == 0


async def test_a_reply_cut_inside_a_tool_call_is_never_continued_nor_executed(rt):
    executed = []

    @tool
    async def echo(text: str) -> str:
        """Echo."""
        executed.append(text)
        return text

    cut = AssistantMessage(
        [Text("I will"), ToolCall("c1", "echo", {"text": "par"})], stop_reason="max_tokens"
    )
    model = ScriptedModel([cut])
    agent = await rt.create(AgentSpec("a", model, tools=[echo], limits=Limits(continue_on_max_tokens=3)))
    result = await agent.run("go")
    assert result.stop_reason == "max_tokens" and len(model.requests) == 1
    assert agent.messages[-1].is_error and agent.messages[-1].text.startswith("TOOL_NOT_STARTED")
    assert executed == []


def test_sessions_show_full_prints_the_replaced_history_and_the_summary(tmp_path, capsys):
    from agentrio.cli import main

    db = tmp_path / "s.db"
    trio.run(_compacted_session, SQLiteStore(db))
    assert main(["sessions", "show", "s1", "--full", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    replaced = out.index("user: first")
    compacted = out.index("--- compacted (manual): the first 4 messages of history replaced by a summary")
    summary = out.index("summary: " + SUMMARY_HEADER.splitlines()[0])
    after = out.index("user: second")
    assert replaced < compacted < summary < after


async def test_a_cancel_during_the_summary_ends_the_compaction_and_keeps_history(rt):
    summarizing = trio.Event()

    async def hang(request):
        summarizing.set()
        await trio.sleep_forever()

    model = ScriptedModel([say(LONG), OVERFLOW, hang])
    agent = await rt.create(_spec(model, keep_recent_tokens=100))
    await agent.run("first")
    before = list(agent.messages)
    async with record(agent) as rec, trio.open_nursery() as nursery:
        results = start_run(nursery, agent, "second")
        await summarizing.wait()
        await agent.cancel()
    assert results[0].stop_reason == "aborted"
    assert [(e.type, getattr(e, "error", None)) for e in rec.events if e.type.startswith("compaction")] == [
        ("compaction_start", None),
        ("compaction_end", "interrupted"),
    ]
    assert list(agent.messages[: len(before)]) == before and agent.messages[len(before)] == UserMessage(
        "second"
    )
    assert request_problems(_next(agent)) == []


async def test_the_models_own_context_window_sets_the_threshold(rt):
    model = ScriptedModel([say(LONG, usage=Usage(850, 5)), say("summary"), say("ok")])
    model.context_window = 1000  # as an adapter's context_window option sets it
    agent = await rt.create(_spec(model, keep_recent_tokens=100))
    await agent.run("first")
    async with record(agent) as rec:
        await agent.run("second")
    assert [e.reason for e in rec.of("compaction_start")] == ["threshold"]
    assert Anthropic("claude", api_key="k", context_window=200_000).context_window == 200_000


async def test_compact_waits_for_the_running_activity(rt):
    release = trio.Event()

    async def slow(args, ctx):
        await release.wait()
        return "slow done"

    slow_tool = Tool("slow", "Slow.", {"type": "object", "properties": {}}, slow)
    model = ScriptedModel([calls(("slow", {})), say(LONG), say("summary")])
    agent = await rt.create(AgentSpec("a", model, tools=[slow_tool], limits=Limits(keep_recent_tokens=100)))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        start_run(nursery, agent, "go")
        await trio.testing.wait_all_tasks_blocked()
        assert agent.running_tools
        outcomes = []

        async def compact():
            outcomes.append(await agent.compact())

        nursery.start_soon(compact)
        await trio.testing.wait_all_tasks_blocked()
        assert outcomes == []  # waits: history is never compacted under a run
        release.set()
    assert outcomes[0].compacted
    types = rec.types()
    assert types.index("agent_end") < types.index("compaction_start")


def test_compaction_events_and_records_round_trip_through_json():
    from agentrio.events import CompactionEnd, CompactionStart, Event
    from agentrio.journal.codec import decode_record, encode_record
    from agentrio.messages import converter

    fields = {"agent_id": "a", "session_id": "s", "seq": 1, "time": 0.0}
    for event in (
        CompactionStart(reason="overflow", tokens_before=900, **fields),
        CompactionEnd(
            reason="overflow",
            tokens_before=900,
            tokens_after=120,
            messages_summarized=7,
            usage=Usage(5, 1),
            **fields,
        ),
    ):
        assert converter.structure(json.loads(json.dumps(converter.unstructure(event))), Event) == event
    record = Compacted(_summary("s"), 3, "manual", 90, 30, Usage(5, 1))
    assert decode_record(encode_record(record)) == record


async def test_a_summary_cut_by_the_output_limit_is_refused(rt):
    model = ScriptedModel([say("hello"), _cut("Goals: the user wa", 4000)])
    agent = await rt.create(_spec(model))
    await agent.run("hi")
    with pytest.raises(CompactionFailed, match=r"cut_summary: the summary was cut off \(max_tokens\)"):
        await agent.compact()
    assert [m.text for m in agent.messages] == ["hi", "hello"]


async def test_background_compaction_summarizes_while_the_step_goes_on(rt, autojump_clock):
    """jai-mono (compaction must not block the step): with
    ``AgentSpec(compaction="background")`` the summary is requested beside
    the step's own request (the summary waits here until that request has
    started: a blocking compaction would never get there) and applied at the
    next step boundary."""
    step_started = trio.Event()

    async def summarize(request):
        await step_started.wait()
        return say("background summary")

    async def first_step(request):
        step_started.set()
        await trio.sleep(1)  # the summary ends meanwhile
        return calls(("echo", {"text": "a"}), usage=Usage(150, 5))

    steps = ScriptedModel(
        [
            calls(("echo", {"text": LONG}), usage=Usage(300, 20)),
            say("done", usage=Usage(600, 5)),
            first_step,
            say("next answer", usage=Usage(150, 5)),
        ]
    )
    summaries = ScriptedModel([summarize])

    class Router:
        async def stream(self, request):
            last = request.messages[-1].text if request.messages else ""
            model = summaries if last == DEFAULT_COMPACTION_PROMPT else steps
            async for event in model.stream(request):
                yield event

    spec = AgentSpec(
        "a",
        Router(),
        tools=[echo_tool()],
        limits=Limits(context_window=1000, compact_at=0.8, keep_recent_tokens=100),
        compaction="background",
    )
    agent = await rt.create(spec)
    await agent.run("go")
    async with record(agent) as rec:
        with trio.fail_after(60):
            result = await agent.run(LONG)
    assert result.stop_reason == "completed"
    events = [(e[0], e[1], e[-1]) if e[0] == "compaction_end" else e[:2] for e in _compaction_events(rec)]
    assert events == [("compaction_start", "background"), ("compaction_end", "background", None)]
    assert steps.requests[3].messages[0].text == _summary("background summary").text
    assert agent.messages[0].text == _summary("background summary").text
