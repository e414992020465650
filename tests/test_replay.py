"""Subscribers that resume after a seq: ``agent.subscribe(since=seq)``, and
subscribers that fall behind and read on from the agent's replay log."""

from __future__ import annotations

from collections import defaultdict

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrio import AgentSpec, ScriptedModel, Tool
from agentrio.actors import replay
from agentrio.actors.bus import SUBSCRIBER_CAPACITY, EventBus
from agentrio.events import MessageUpdate, ToolExecutionUpdate, TurnStart
from agentrio.models.events import TextDelta
from agentrio.models.scripted import message_events

from .helpers import calls, say

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
    st.tuples(st.just("tool"), st.sampled_from(["a", "b"]), st.sampled_from(["stdout", "stderr"]), st.text(max_size=5)),
)


def _emit_all(bus: EventBus, steps) -> None:
    for n, step in enumerate(steps):
        if step[0] == "turn":
            bus.emit(TurnStart, turn=n)
        elif step[0] == "text":
            bus.emit(MessageUpdate, delta=TextDelta(step[1], step[2]))
        else:
            bus.emit(ToolExecutionUpdate, tool_call_id=step[1], tool_name="t", progress={"stream": step[2], "text": step[3]})


async def _live_and_replayed(steps, since_fraction):
    bus = EventBus("agent", "session")
    async with bus.subscribe() as live:
        _emit_all(bus, steps)
        seen = [live.receive_nowait() for _ in range(len(live))]
    since = int(bus.seq * since_fraction)
    return seen, since, bus.replay(since)


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(_step, max_size=60), since_fraction=st.floats(0, 1))
def test_the_log_replays_every_lifecycle_event_after_since_and_the_unseen_text_of_each_delta_run(steps, since_fraction):
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
            bus.emit(ToolExecutionUpdate, tool_call_id="a", tool_name="t", progress={"stream": "stdout", "text": piece})
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
        assert len(idle) == SUBSCRIBER_CAPACITY + 1  # then it stopped buffering
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


async def test_a_since_older_than_the_log_starts_with_what_was_missed(rt):
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("one"), say("two")])))
    await agent.run("first")  # nobody subscribed: nothing is logged yet
    logged_from = agent._bus.seq
    async with agent.subscribe(since=0) as events:
        first = events.receive_nowait()
        await agent.run("second")
        rest = [events.receive_nowait() for _ in range(len(events))]
    assert (first.type, first.missed, first.seq) == ("lagged", logged_from, 0)
    assert rest[0].seq == logged_from + 1 and rest[-2].type == "agent_end"


@pytest.mark.parametrize("since", [-1, 10**6, "3", 1.5])
async def test_a_since_that_is_no_seq_of_the_agent_is_refused(rt, since):
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("hi")])))
    await agent.run("go")
    with pytest.raises(ValueError, match="since="):
        async with agent.subscribe(since=since):
            pass
