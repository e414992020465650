"""Runs, streams and subscribers a host can rely on."""

from __future__ import annotations

import gc
import tracemalloc
import weakref

import trio
import trio.lowlevel
from hypothesis import given, settings
from hypothesis import strategies as st

import agentrio
from agentrio import AgentSpec, Limits, Runtime, ScriptedModel, SQLiteStore, Tool, ToolFatal
from agentrio.actors.bus import SUBSCRIBER_CAPACITY

from .helpers import calls, say, start_run


def _echo_model() -> ScriptedModel:
    """Answers each prompt with ``answer to <prompt>``."""

    def reply(request):
        return say(f"answer to {request.messages[-1].text}")

    return ScriptedModel([reply] * 50)


# -- one result per prompt ------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(prompts=st.integers(2, 5), seed=st.randoms(use_true_random=False))
def test_concurrent_runs_each_get_the_answer_to_their_own_prompt(prompts, seed):
    async def main():
        async with Runtime() as rt:
            agent = await rt.create(AgentSpec("a", _echo_model()))
            results = {}

            async def ask(n):
                await trio.sleep(seed.random() / 1000)
                results[n] = await agent.run(f"q{n}")

            async with trio.open_nursery() as nursery:
                for n in range(prompts):
                    nursery.start_soon(ask, n)
        return results

    results = trio.run(main)
    for n, result in results.items():
        assert result.text == f"answer to q{n}"
        assert [m.text for m in result.new_messages] == [f"q{n}", f"answer to q{n}"]
        assert (result.turns, result.steps, result.joined) == (1, 1, False)


async def test_a_steered_input_says_it_joined_another_turn(rt):
    release = trio.Event()

    async def slow(args, ctx):
        await release.wait()
        return "done"

    model = ScriptedModel([calls(("slow", {})), say("both handled")])
    agent = await rt.create(AgentSpec("a", model, tools=[Tool("slow", "", {"type": "object"}, slow)]))
    async with trio.open_nursery() as nursery:
        results = start_run(nursery, agent, "start")
        while not agent.running_tools:
            await trio.lowlevel.checkpoint()
        steered = await agent.steer("also this")
        release.set()
    assert results[0].text == "both handled" and not results[0].joined
    assert steered.message.text == "also this"
    assert [m.text for m in results[0].new_messages][:1] == ["start"]


async def test_max_turns_counts_model_requests_and_steps_says_how_many(rt):
    model = ScriptedModel([calls(("echo", {"text": "x"})), calls(("echo", {"text": "y"}))])
    from .helpers import echo_tool

    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], limits=Limits(max_turns=2)))
    result = await agent.run("go")
    assert (result.stop_reason, result.steps, result.turns) == ("max_turns", 2, 1)


# -- honest results ---------------------------------------------------------------


async def test_a_fatal_tool_error_is_on_the_result(rt):
    async def broken(args, ctx):
        raise ToolFatal("the disk is gone")

    model = ScriptedModel([calls(("broken", {}))])
    agent = await rt.create(AgentSpec("a", model, tools=[Tool("broken", "", {"type": "object"}, broken)]))
    result = await agent.run("go")
    assert result.stop_reason == "tool_error"
    assert "the disk is gone" in result.error


async def test_the_cancel_cause_is_on_turn_end_agent_end_the_result_and_the_journal(rt):
    from agentrio.journal.records import TurnEnded

    async def never(request):
        await trio.sleep_forever()

    model = ScriptedModel([never])
    agent = await rt.create(AgentSpec("a", model))
    async with agent.subscribe() as events, trio.open_nursery() as nursery:
        results = start_run(nursery, agent, "go")
        while not model.requests:  # mid-turn, in the model request
            await trio.lowlevel.checkpoint()
        await agent.cancel("user")
    seen = []
    while True:
        try:
            seen.append(events.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel):
            break
    assert [(e.type, e.cancel_cause) for e in seen if e.type in ("turn_end", "agent_end")] == [
        ("turn_end", "user"),
        ("agent_end", "user"),
    ], [e.type for e in seen]
    assert results[0].cancel_cause == "user"
    records = (await rt.store.load_session(agent.session_id))[1]
    assert [r.cancel_cause for r in records if isinstance(r, TurnEnded)] == ["user"]


# -- streams -------------------------------------------------------------------------


async def test_a_stream_yields_every_event_of_its_run_in_order_ending_with_agent_end(rt):
    from .helpers import echo_tool

    model = ScriptedModel([calls(("echo", {"text": "x"}), ("echo", {"text": "y"})), say("done")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    async with agent.stream("go") as run:
        events = [event async for event in run]
    assert events[-1].type == "agent_end"
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    lifecycle = [e.type for e in events if e.type not in ("message_update", "state", "inbox", "status")]
    assert lifecycle == [
        "agent_start",
        "turn_start",
        "step_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "tool_execution_end",
        "message_start",
        "message_end",
        "step_end",
        "step_start",
        "message_start",
        "message_end",
        "step_end",
        "turn_end",
        "agent_end",
    ]
    assert run.result.text == "done" and run.result.stop_reason == "completed"


async def test_a_stream_of_a_cancelled_run_still_ends_with_its_agent_end(rt):
    async def never(request):
        await trio.sleep_forever()

    agent = await rt.create(AgentSpec("a", ScriptedModel([never])))
    async with agent.stream("go") as run:
        types = []
        async for event in run:
            types.append(event.type)
            if event.type == "agent_start":
                await agent.cancel()
    assert types[-1] == "agent_end"
    assert run.result.stop_reason == "aborted"


async def test_run_returns_after_subscribers_were_handed_the_runs_last_event(rt):
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("hi")])))
    async with agent.subscribe() as events:
        await agent.run("go")
        handed = []
        while True:
            try:
                handed.append(events.receive_nowait().type)
            except trio.WouldBlock:
                break
    assert handed[-2:] == ["agent_end", "status"]


async def test_an_idle_agent_keeps_no_result_its_caller_let_go(rt):
    """What a run returned is the caller's: the agent, waiting for its next
    message, holds no reference to it (nor to the request that asked)."""
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("hi")])))
    result = await agent.run("go")
    assert result.stop_reason == "completed"
    kept = weakref.ref(result)
    del result
    gc.collect()
    assert kept() is None


# -- bounded subscribers -----------------------------------------------------------------


async def test_a_subscriber_that_never_reads_costs_bounded_memory_and_loses_no_lifecycle_event(rt):
    chunk = "x" * 4096
    pieces = 50 * 1024 * 1024 // len(chunk)  # 50 MB of tool output

    async def loud(args, ctx):
        for _ in range(pieces):
            ctx.report({"stream": "stdout", "text": chunk})
        return "printed"

    model = ScriptedModel([calls(("loud", {})), say("done")])
    agent = await rt.create(AgentSpec("a", model, tools=[Tool("loud", "", {"type": "object"}, loud)]))
    async with agent.subscribe() as events:
        tracemalloc.start()
        await agent.run("go")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        kept = []
        while True:
            try:
                kept.append(events.receive_nowait())
            except trio.WouldBlock:
                break
    # Bounded: the subscriber's buffer of raw pieces plus the log's one
    # capped run of coalesced text, not the 50 MB the tool printed.
    assert peak < 2 * SUBSCRIBER_CAPACITY * len(chunk) + 4 * 1024 * 1024
    seqs = [e.seq for e in kept if e.type != "lagged"]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    updates = [e for e in kept if e.type == "tool_execution_update"]
    assert len(updates) <= SUBSCRIBER_CAPACITY + 1
    lagged = [e for e in kept if e.type == "lagged"]
    assert lagged and sum(e.dropped for e in lagged) > 0 and not any(e.missed for e in lagged)
    # Every lifecycle event is there, in order.
    assert [
        e.type for e in kept if e.type in ("tool_execution_end", "message_end", "turn_end", "agent_end")
    ] == [
        "message_end",
        "message_end",
        "tool_execution_end",
        "message_end",
        "message_end",
        "turn_end",
        "agent_end",
    ]


# -- resume -----------------------------------------------------------------------------


async def test_a_restored_session_resumes_its_pending_input_and_a_later_run_is_its_own(tmp_path):
    db = tmp_path / "s.db"
    async with SQLiteStore(db) as store, Runtime(store) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([])), session_id="s1")
        await agent.inject("pending context")
        await agent.dispose()
    model = ScriptedModel([say("answered the pending"), say("answered the new")])
    async with SQLiteStore(db) as store, Runtime(store, resume=True) as rt:
        agent = await rt.create(AgentSpec("a", model), session_id="s1")
        await agent.wait_idle()
        assert [m.text for m in agent.messages] == ["pending context", "answered the pending"]
        result = await agent.run("new")
    assert [m.text for m in result.new_messages] == ["new", "answered the new"]


# -- children and scripts ---------------------------------------------------------------


async def test_children_are_live_handles(rt):
    from agentrio import agent_tool

    started = trio.Event()

    async def wait(args, ctx):
        started.set()
        await trio.sleep_forever()

    worker = AgentSpec(
        "worker", ScriptedModel([calls(("wait", {}))]), tools=[Tool("wait", "", {"type": "object"}, wait)]
    )
    lead = AgentSpec(
        "lead",
        ScriptedModel([calls(("ask", {"task": "t"})), say("end")]),
        tools=[agent_tool(worker, name="ask", description="")],
    )
    parent = await rt.create(lead)
    async with trio.open_nursery() as nursery:
        results = start_run(nursery, parent, "go")
        await started.wait()
        (child,) = parent.children()
        assert child.parent_id == parent.id and child.spec.name == "worker"
        await child.cancel()
    assert results[0].text == "end"
    assert parent.children() == ()


def test_run_sync_runs_one_prompt_from_plain_code():
    result = agentrio.run_sync(AgentSpec("a", ScriptedModel([say("hello")])), "hi")
    assert result.stop_reason == "completed" and result.text == "hello"
