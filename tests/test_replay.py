"""Subscribers that resume after a seq: ``agent.subscribe(since=seq)``, and
subscribers that fall behind and read on from the agent's replay log, and
from the journal's messages for what the log no longer holds."""

from __future__ import annotations

from collections import defaultdict

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrio import (
    AgentSpec,
    Limits,
    MemoryStore,
    Runtime,
    ScriptedModel,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from agentrio.actors import bus as bus_module
from agentrio.actors import replay
from agentrio.actors.bus import SUBSCRIBER_CAPACITY, EventBus
from agentrio.actors.compaction import SUMMARY_HEADER
from agentrio.events import MessageEnd, MessageUpdate, ToolExecutionUpdate, TurnStart
from agentrio.journal import SessionState
from agentrio.models.events import TextDelta
from agentrio.models.scripted import message_events

from .helpers import calls, counting_switches, echo_tool, say


def _key(event) -> tuple:
    """Which text a delta continues."""
    if event.type == "message_update":
        return ("message", event.delta.index)
    return ("tool", event.tool_call_id, event.progress["stream"])


def _texts(events) -> dict[tuple, str]:
    texts: dict[tuple, str] = defaultdict(str)
    for event in events:
        if replay.is_text_delta(event):
            texts[_key(event)] += replay.delta_text(event)
    return dict(texts)


def _nonempty(texts: dict) -> dict:
    return {key: text for key, text in texts.items() if text}


def _lifecycle(events) -> list:
    return [e for e in events if not replay.is_text_delta(e) and e.type != "lagged"]


def _strictly_increasing(events) -> bool:
    seqs = [e.seq for e in events if e.type != "lagged"]
    return seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


# -- the log ----------------------------------------------------------------------------

# One emitted event: a lifecycle event, or a delta of one of a few texts.
_step = st.one_of(
    st.just(("turn",)),
    st.tuples(st.just("text"), st.integers(0, 1), st.text(max_size=5)),
    st.tuples(
        st.just("tool"),
        st.sampled_from(["a", "b"]),
        st.sampled_from(["stdout", "stderr"]),
        st.text(max_size=5),
    ),
)


def _emit_all(bus: EventBus, steps) -> None:
    for n, step in enumerate(steps):
        if step[0] == "turn":
            bus.emit(TurnStart, turn=n)
        elif step[0] == "text":
            bus.emit(MessageUpdate, delta=TextDelta(step[1], step[2]))
        else:
            bus.emit(
                ToolExecutionUpdate,
                tool_call_id=step[1],
                tool_name="t",
                progress={"stream": step[2], "text": step[3]},
            )


async def _live_and_replayed(steps, since_fraction):
    bus = EventBus("agent", "session")
    async with bus.subscribe() as live:
        _emit_all(bus, steps)
        seen = [live.receive_nowait() for _ in range(len(live))]
    since = int(bus.seq * since_fraction)
    return seen, since, bus.replay(since)


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(_step, max_size=60), since_fraction=st.floats(0, 1))
def test_the_log_replays_every_lifecycle_event_after_since_and_the_unseen_text_of_each_delta_run(
    steps, since_fraction
):
    seen, since, (missed, replayed) = trio.run(_live_and_replayed, steps, since_fraction)
    after = [e for e in seen if e.seq > since]
    assert missed == 0
    assert _lifecycle(replayed) == _lifecycle(after)
    assert _nonempty(_texts(replayed)) == _nonempty(_texts(after))
    assert _strictly_increasing(replayed)
    # Deltas come coalesced: never more of them than the live reader got.
    assert sum(map(replay.is_text_delta, replayed)) <= sum(map(replay.is_text_delta, after))


async def test_the_log_keeps_a_bounded_run_of_text_and_counts_what_it_left_out():
    bus = EventBus("agent", "session")
    piece = "x" * 1000
    async with bus.subscribe():
        for _ in range(1000):  # 1 MB of output in one run
            bus.emit(
                ToolExecutionUpdate,
                tool_call_id="a",
                tool_name="t",
                progress={"stream": "stdout", "text": piece},
            )
        bus.emit(TurnStart, turn=1)
    missed, events = bus.replay(0)
    assert missed == 0
    assert [e.type for e in events] == ["tool_execution_update", "lagged", "turn_start"]
    assert events[0].progress["text"] == piece * (replay.COALESCED_TEXT_LIMIT // len(piece))
    assert events[1].dropped == 1000 - replay.COALESCED_TEXT_LIMIT // len(piece)
    # Resuming past the kept text brings only the count of what was left out.
    missed, events = bus.replay(900)
    assert [(e.type, getattr(e, "dropped", None)) for e in events] == [("lagged", 100), ("turn_start", None)]


async def test_the_log_holds_its_latest_entries_and_says_how_many_seqs_it_no_longer_holds(monkeypatch):
    monkeypatch.setattr(replay, "REPLAY_CAPACITY", 10)
    bus = EventBus("agent", "session")
    async with bus.subscribe():
        for turn in range(25):
            bus.emit(TurnStart, turn=turn)
    missed, events = bus.replay(3)
    assert missed == 12  # seqs 4..15 were evicted
    assert [e.seq for e in events] == list(range(16, 26))
    assert bus.replay(15) == (0, events)


# -- agents -----------------------------------------------------------------------------


def _held_tools(release: trio.Event, count: int) -> list[Tool]:
    async def held(args, ctx):
        ctx.report({"stream": "stdout", "text": f"working on {args['n']}\n"})
        await release.wait()
        ctx.report({"stream": "stdout", "text": "done\n"})
        return f"result {args['n']}"

    return [Tool("held", "", {"type": "object", "properties": {"n": {"type": "integer"}}}, held)]


async def test_a_subscriber_that_pauses_mid_run_resumes_with_since_and_sees_what_a_never_paused_one_saw(rt):
    release = trio.Event()
    model = ScriptedModel(
        [calls(("held", {"n": 1}), ("held", {"n": 2}), text="let me work on both"), say("both are done now")],
        chunk_size=2,
    )
    agent = await rt.create(AgentSpec("a", model, tools=_held_tools(release, 2)))
    steady, paused = [], []
    async with trio.open_nursery() as nursery, agent.subscribe() as everything:

        async def read_all():
            async for event in everything:
                steady.append(event)
                if event.type == "agent_end":
                    return

        nursery.start_soon(read_all)
        async with agent.subscribe() as events:
            nursery.start_soon(agent.run, "go")
            async for event in events:
                paused.append(event)
                if event.type == "message_update":
                    break  # paused in the middle of the streaming answer
        # Away while the answer streams, both tools start and report progress.
        while sum(e.type == "tool_execution_update" for e in steady) < 2:
            await trio.sleep(0.01)
        async with agent.subscribe(since=paused[-1].seq) as events:
            release.set()
            async for event in events:
                paused.append(event)
                if event.type == "agent_end":
                    break
    assert paused[-1].type == steady[-1].type == "agent_end"
    assert _strictly_increasing(paused)
    assert _lifecycle(paused) == _lifecycle(steady)
    assert _texts(paused) == _texts(steady)
    # The resumed part came coalesced: one delta for the rest of the answer.
    assert sum(map(replay.is_text_delta, paused)) < sum(map(replay.is_text_delta, steady))


class _PausingModel:
    """Streams ``text`` and stops halfway until ``go`` is set."""

    def __init__(self, text: str, halfway: trio.Event, go: trio.Event) -> None:
        self.text, self.halfway, self.go = text, halfway, go

    async def stream(self, request):
        deltas = 0
        for event in message_events(say(self.text), chunk_size=3):
            if isinstance(event, TextDelta):
                deltas += 1
                if deltas == 4:
                    self.halfway.set()
                    await self.go.wait()
            yield event


async def test_a_message_still_streaming_arrives_as_one_catch_up_update_with_its_text_so_far(rt):
    halfway, go = trio.Event(), trio.Event()
    text = "the quick brown fox jumps over the lazy dog"
    agent = await rt.create(AgentSpec("a", _PausingModel(text, halfway, go)))
    async with trio.open_nursery() as nursery:
        async with agent.subscribe() as first:
            nursery.start_soon(agent.run, "go")
            start = None
            async for event in first:
                if event.type == "message_start" and event.role == "assistant":
                    start = event
                    break
        await halfway.wait()
        async with agent.subscribe(since=start.seq) as late:
            # All there is until the model goes on: the text block's start and
            # one update with the text so far.
            start_of_text, catch_up = late.receive_nowait(), late.receive_nowait()
            with pytest.raises(trio.WouldBlock):
                late.receive_nowait()
            go.set()
            rest = []
            async for event in late:
                rest.append(event)
                if event.type == "agent_end":
                    break
    assert start_of_text.delta.type == "text_start" and start_of_text.seq == start.seq + 1
    assert catch_up.delta.type == "text_delta" and catch_up.delta.text == text[:9]
    assert catch_up.seq == start.seq + 4
    assert [e.seq for e in rest] == list(range(catch_up.seq + 1, catch_up.seq + 1 + len(rest)))
    assert catch_up.delta.text + "".join(e.delta.text for e in rest if replay.is_text_delta(e)) == text


async def test_a_subscriber_far_behind_reads_on_from_the_log_without_losing_a_lifecycle_event(rt):
    n = SUBSCRIBER_CAPACITY // 4  # well over SUBSCRIBER_CAPACITY events in one run

    async def quick(args, ctx):
        ctx.report({"stream": "stdout", "text": "."})
        return "ok"

    tool = Tool("quick", "", {"type": "object"}, quick)
    model = ScriptedModel([calls(*[("quick", {})] * n), say("finished")])
    agent = await rt.create(AgentSpec("a", model, tools=[tool]))
    steady, late = [], []
    async with trio.open_nursery() as nursery, agent.subscribe() as everything, agent.subscribe() as idle:

        async def read_all():
            async for event in everything:
                steady.append(event)
                if event.type == "agent_end":
                    return

        nursery.start_soon(read_all)
        await agent.run("go")  # ``idle`` reads nothing meanwhile
        assert len(idle) == SUBSCRIBER_CAPACITY  # then it stopped buffering
        async for event in idle:
            late.append(event)
            if event.type == "agent_end":
                break
    assert len(steady) > 2 * SUBSCRIBER_CAPACITY
    lagged = [e for e in late if e.type == "lagged"]
    assert lagged and not any(e.missed for e in lagged)
    assert _strictly_increasing(late)
    assert _lifecycle(late) == _lifecycle(steady)
    assert _texts(late) == _texts(steady)


# -- what the log no longer holds: the journal stands in ----------------------------------


def _drain(events) -> list:
    """Every event the subscription has for a reader now."""
    out = []
    while True:
        try:
            out.append(events.receive_nowait())
        except trio.WouldBlock:
            return out


def _ends(events) -> list:
    return [e for e in events if e.type == "message_end"]


def _one_tool_turns(turns: int) -> ScriptedModel:
    replies = []
    for n in range(turns):
        replies += [calls(("echo", {"text": f"t{n}"})), say(f"done {n}")]
    return ScriptedModel(replies)


def _check_journal_stands_in(got, steady, since, lost, agent) -> None:
    """``got``, read after ``since`` when the log held nothing at or before
    ``lost``: one ``lagged`` event, then the messages announced in between
    from the journal (with the seqs they had), then what a steady reader saw
    after ``lost``."""
    lagged, rest = got[0], got[1:]
    assert (lagged.type, lagged.seq, lagged.missed) == ("lagged", since, lost - since)
    replayed = [e for e in rest if e.type == "message_end" and e.replayed]
    assert rest[: len(replayed)] == replayed  # the journal's part comes first
    held = agent.messages
    expected = [e for e in _ends(steady) if since < e.seq <= lost and any(e.message is m for m in held)]
    assert [(e.seq, e.message) for e in replayed] == [(e.seq, e.message) for e in expected]
    after = [e for e in steady if e.seq > lost]
    assert _lifecycle(rest[len(replayed) :]) == _lifecycle(after)
    assert _nonempty(_texts(rest[len(replayed) :])) == _nonempty(_texts(after))
    assert _strictly_increasing(got)


@pytest.mark.parametrize("since_at", ["agent_start", "message_end", "tool_execution_start", "turn_end"])
async def test_a_since_older_than_the_log_gets_each_later_message_once_from_the_journal_then_the_log(
    rt, monkeypatch, since_at
):
    monkeypatch.setattr(replay, "REPLAY_CAPACITY", 8)
    agent = await rt.create(AgentSpec("a", _one_tool_turns(4), tools=[echo_tool()]))
    async with agent.subscribe() as everything:
        for n in range(3):
            await agent.run(f"turn {n}")
        steady = _drain(everything)
        # In the first turn, long evicted from the log.
        since = next(e.seq for e in steady if e.type == since_at)
        lost = agent._bus.lost_through
        assert lost > since + 40
        async with agent.subscribe(since=since) as resumed:
            got = _drain(resumed)
            await agent.run("last turn")
            got += _drain(resumed)
        steady += _drain(everything)
    assert got[-2].type == "agent_end" and got[-2] == steady[-2]
    _check_journal_stands_in(got, steady, since, lost, agent)
    # Every message after the last one announced at or before since, once.
    before = sum(e.seq <= since for e in _ends(steady))
    assert [e.message for e in _ends(got)] == list(agent.messages[before:])
    assert [e.seq for e in _ends(got)] == [e.seq for e in _ends(steady)[before:]]
    assert any(isinstance(e.message, ToolResultMessage) for e in _ends(got) if e.replayed)


async def test_a_reader_that_never_reads_while_many_turns_run_then_gets_every_message_once(rt, monkeypatch):
    monkeypatch.setattr(bus_module, "SUBSCRIBER_CAPACITY", 64)  # a turn emits 40 events
    monkeypatch.setattr(replay, "REPLAY_CAPACITY", 16)
    turns = 30  # 120 messages: the journal's part comes in several catch-ups
    agent = await rt.create(AgentSpec("a", _one_tool_turns(turns), tools=[echo_tool()]))
    steady = []
    async with agent.subscribe() as everything, agent.subscribe() as idle:
        for n in range(turns):
            await agent.run(f"turn {n}")
            steady += _drain(everything)
        assert len(idle) == 64
        lost = agent._bus.lost_through
        got = _drain(idle)
    assert got[:64] == steady[:64]
    _check_journal_stands_in(got[64:], steady, steady[63].seq, lost, agent)
    assert sum(e.type == "lagged" for e in got) == 1
    assert [e.message for e in _ends(got)] == list(agent.messages)
    assert [e.seq for e in _ends(got)] == [e.seq for e in _ends(steady)]
    assert got[-2].type == "agent_end"


async def test_a_catch_up_taken_in_parts_while_the_log_loses_more_brings_every_message_once(monkeypatch):
    monkeypatch.setattr(bus_module, "SUBSCRIBER_CAPACITY", 4)
    monkeypatch.setattr(replay, "REPLAY_CAPACITY", 4)
    bus = EventBus("agent", "session")
    bus.history = state = SessionState()
    sent = []

    def say_more(count: int) -> None:
        for _ in range(count):
            message = UserMessage(f"message {len(sent)}")
            state.messages.append(message)
            bus.emit(MessageEnd, message=message)
            bus.emit(TurnStart, turn=len(sent))
            sent.append(message)

    async with bus.subscribe() as events:
        say_more(10)
        first = [events.receive_nowait() for _ in range(9)]  # 4 buffered, lagged, 4 replayed
        say_more(10)  # meanwhile the log loses more
        rest = _drain(events)
    got = first + rest
    assert [e.type for e in got[:5]] == ["message_end", "turn_start", "message_end", "turn_start", "lagged"]
    assert [e.message for e in _ends(got)] == sent
    assert [e.seq for e in _ends(got)] == [2 * n + 1 for n in range(20)]
    lagged = [e for e in got if e.type == "lagged"]
    assert [(e.seq, e.missed) for e in lagged] == [(4, 12), (16, 20)]
    assert got[-4:] == bus.replay(36)[1]  # then the log's part
    assert _strictly_increasing(got)


async def test_a_replay_after_a_compaction_skips_what_it_replaced_and_duplicates_nothing(rt, monkeypatch):
    monkeypatch.setattr(replay, "REPLAY_CAPACITY", 8)
    long = "x" * 800
    model = ScriptedModel(
        [calls(("echo", {"text": long})), say(long), say("a"), say("the summary"), say("b"), say("c")]
    )
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], limits=Limits(keep_recent_tokens=100)))
    async with agent.subscribe() as everything:
        await agent.run("first")
        await agent.run("second")
        await agent.compact()
        await agent.run("third")
        steady = _drain(everything)
        assert agent.messages[0].text.startswith(SUMMARY_HEADER)
        replaced = [m for m in (e.message for e in _ends(steady)) if not any(m is h for h in agent.messages)]
        assert [m.text for m in replaced][:1] == ["first"] and len(replaced) == 4
        since = _ends(steady)[0].seq  # the first prompt
        lost = agent._bus.lost_through
        async with agent.subscribe(since=since) as resumed:
            got = _drain(resumed)
            await agent.run("fourth")
            got += _drain(resumed)
        steady += _drain(everything)
    _check_journal_stands_in(got, steady, since, lost, agent)
    assert [e.message.text for e in _ends(got) if e.replayed] == ["second", "a", "third"]
    assert all(not any(e.message is m for m in replaced) for e in _ends(got) if e.replayed)
    texts = [e.message.text for e in _ends(got)]
    assert len(texts) == len(set(texts))
    assert texts[-2:] == ["fourth", "c"]


async def test_a_replay_of_a_restored_session_brings_only_the_messages_this_process_announced():
    store = MemoryStore()
    async with Runtime(store) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([say("one")])), session_id="s")
        await agent.run("first")
    async with Runtime(store) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([say("two")])), session_id="s")
        await agent.run("second")  # nobody subscribed: nothing is logged yet
        logged_from = agent._bus.seq
        async with agent.subscribe(since=0) as events:
            got = _drain(events)
        assert [m.text for m in agent.messages] == ["first", "one", "second", "two"]
    assert (got[0].type, got[0].seq, got[0].missed) == ("lagged", 0, logged_from)
    assert [(e.type, e.message.text, e.replayed) for e in got[1:]] == [
        ("message_end", "second", True),
        ("message_end", "two", True),
    ]


def test_message_seqs_skip_records_journaled_without_an_event_of_their_own():
    seqs = replay.MessageSeqs(5)  # records 0..4 came before (restored history)
    seqs.add(5, 10)
    seqs.add(8, 20)  # records 6 and 7 were written by crash repair, with no event
    seqs.add(9, 21)
    seqs.add(7, 30)  # too late: no record is announced twice
    assert list(seqs.between(0, 100)) == [(5, 10), (8, 20), (9, 21)]
    assert list(seqs.between(10, 20)) == [(8, 20)]
    assert list(seqs.between(20, 20)) == []


@pytest.mark.parametrize("since", [-1, 10**6, "3", 1.5])
async def test_a_since_that_is_no_seq_of_the_agent_is_refused(rt, since):
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("hi")])))
    await agent.run("go")
    with pytest.raises(ValueError, match="since="):
        async with agent.subscribe(since=since):
            pass


async def test_a_reader_takes_a_burst_of_events_without_a_task_switch_each_yet_a_cancel_reaches_it():
    bus = EventBus("agent", "session")
    async with bus.subscribe() as events, counting_switches() as switches:
        for turn in range(10 * bus_module.YIELD_EVERY):
            bus.emit(TurnStart, turn=turn)
        before = switches()
        got = [await events.receive() for _ in range(10 * bus_module.YIELD_EVERY)]
        # It still yields now and then: once every YIELD_EVERY events (give
        # or take the edges: trio may run the bystander first or last).
        assert 9 <= switches() - before <= 12
        assert [e.turn for e in got] == list(range(10 * bus_module.YIELD_EVERY))

        # A reader cancelled while a stream of events keeps coming is
        # cancelled within YIELD_EVERY reads, and loses nothing.
        for turn in range(3 * bus_module.YIELD_EVERY):
            bus.emit(TurnStart, turn=turn)
        read = []
        with trio.CancelScope() as scope:
            scope.cancel()
            while True:
                read.append((await events.receive()).turn)
                bus.emit(TurnStart, turn=-1)  # the agent keeps emitting
        assert scope.cancelled_caught and len(read) < bus_module.YIELD_EVERY
        rest = [(await events.receive()).turn for _ in range(3 * bus_module.YIELD_EVERY - len(read))]
        assert read + rest == list(range(3 * bus_module.YIELD_EVERY))
