"""Steering, follow-ups, injected context, wake-ups and phases."""

import pytest
import trio
import trio.lowlevel

from agentrio import AgentDisposed, AgentSpec, Hooks, Reject, ScriptedModel, UserMessage

from .conftest import record
from .helpers import calls, say, sleeper, start_run


def _user_texts(request):
    return [m.text for m in request.messages if isinstance(m, UserMessage)]


async def test_steering_joins_the_current_turn_after_the_batch_commits(rt, autojump_clock):
    log = []
    model = ScriptedModel(
        [
            calls(("sleep", {"seconds": 1, "tag": "quick"}), ("sleep", {"seconds": 5, "tag": "slow"})),
            say("adjusted"),
        ]
    )
    agent = await rt.create(AgentSpec("a", model, tools=[sleeper(log=log)]))

    async with record(agent) as rec, trio.open_nursery() as nursery:
        results = start_run(nursery, agent, "start")
        await trio.sleep(2)  # "quick" finished, "slow" still running
        await agent.steer("use index.ts instead")

    # The steer did not cancel the running tool...
    assert ("end", "slow") in [(k, t) for k, t, _ in log]
    # ...and reached the model right after the batch, in the same turn.
    second = model.requests[1]
    assert [m.role for m in second.messages] == ["user", "assistant", "tool_result", "tool_result", "user"]
    assert second.messages[-1].text == "use index.ts instead"
    assert len(rec.of("turn_start")) == 1 and results[0].stop_reason == "completed"


async def test_follow_ups_wait_for_the_turn_to_end_and_get_a_turn_each(rt, autojump_clock):
    model = ScriptedModel(
        [
            calls(("sleep", {"seconds": 3, "tag": "x"})),
            say("first done"),
            say("tests ran"),
            say("docs written"),
        ]
    )
    agent = await rt.create(AgentSpec("a", model, tools=[sleeper()]))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "fix the bug")
        await trio.sleep(1)
        await agent.followup("then run the tests")
        await agent.followup("then write docs")
    assert [_user_texts(r)[-1] for r in model.requests] == [
        "fix the bug",
        "fix the bug",
        "then run the tests",
        "then write docs",
    ]
    # The first follow-up is not in the first turn's second request.
    assert _user_texts(model.requests[1]) == ["fix the bug"]
    assert len(rec.of("turn_start")) == 3
    assert len(rec.of("agent_start")) == 1 and rec.types()[-1] == "agent_end"


async def test_injected_context_comes_before_the_queued_prompt(rt):
    model = ScriptedModel([say("ok"), say("ok again")])
    agent = await rt.create(AgentSpec("a", model))
    async with record(agent) as rec:
        await agent.inject("the user is on the main branch")
        await trio.lowlevel.checkpoint()
        assert agent.status == "idle" and rec.of("agent_start") == []  # inject does not wake
        await agent.run("commit the change")
    assert _user_texts(model.requests[0]) == ["the user is on the main branch", "commit the change"]


async def test_steer_while_idle_starts_a_turn(rt):
    model = ScriptedModel([say("on it")])
    agent = await rt.create(AgentSpec("a", model))
    await agent.steer("look at the logs")
    await agent.wait_idle()
    assert [m.text for m in agent.messages] == ["look at the logs", "on it"]


async def test_run_while_busy_queues_and_each_run_gets_the_turn_that_answered_it(rt, autojump_clock):
    model = ScriptedModel([calls(("sleep", {"seconds": 2, "tag": "x"})), say("one"), say("two")])
    agent = await rt.create(AgentSpec("a", model, tools=[sleeper()]))
    results = {}
    async with trio.open_nursery() as nursery:

        async def run(name, prompt):
            results[name] = await agent.run(prompt)

        nursery.start_soon(run, "first", "one")
        await trio.sleep(1)
        nursery.start_soon(run, "second", "two")
    # One activity answered both, each prompt with its own turn.
    first, second = results["first"], results["second"]
    assert next(m.text for m in first.new_messages) == "one" and first.text == "one" and first.steps == 2
    assert [m.text for m in second.new_messages] == ["two", "two"] and second.steps == 1
    assert (first.turns, second.turns, first.joined, second.joined) == (1, 1, False, False)


async def test_agent_end_only_when_both_queues_are_empty(rt):
    model = ScriptedModel([say("a"), say("b")])
    stopping_calls = []

    async def turn_stopping(a):
        if not stopping_calls:
            await a.followup("second")  # arrives as the first turn is ending
        stopping_calls.append(1)

    agent = await rt.create(AgentSpec("b", model, hooks=Hooks(turn_stopping=turn_stopping)))
    async with record(agent) as rec:
        await agent.run("first")
        await agent.wait_idle()
    types = rec.types()
    assert types.count("agent_end") == 1 and types.count("turn_start") == 2


async def test_status_events_only_on_change(rt):
    model = ScriptedModel([say("a"), say("b")])
    agent = await rt.create(AgentSpec("a", model))
    async with record(agent) as rec:
        await agent.run("one")
        await agent.run("two")
    assert [e.status for e in rec.of("status")] == ["running", "idle", "running", "idle"]


# -- phases and latching --------------------------------------------------------


async def test_a_wake_up_during_maintenance_is_latched(rt):
    model = ScriptedModel([say("after maintenance")])
    agent = await rt.create(AgentSpec("a", model))
    proceed = trio.Event()
    order = []

    async def compact():
        order.append("maintenance start")
        await proceed.wait()
        order.append("maintenance end")
        return "compacted"

    async with record(agent) as rec, trio.open_nursery() as nursery:

        async def maintain():
            order.append(await agent.run_maintenance(compact))

        nursery.start_soon(maintain)
        await trio.sleep(0.01)
        await agent.followup("hello")
        await trio.sleep(0.01)
        assert rec.of("agent_start") == [] and agent.status == "idle"  # maintenance reports idle
        proceed.set()
        await agent.wait_idle()
        order.append("idle")
    assert order == ["maintenance start", "maintenance end", "compacted", "idle"]
    assert agent.messages[-1].text == "after maintenance"


async def test_maintenance_errors_reach_the_caller_not_the_agent(rt):
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("fine")])))

    async def broken():
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope"):
        await agent.run_maintenance(broken)
    assert (await agent.run("still alive")).stop_reason == "completed"


async def test_waking_input_during_an_abort_waits_for_the_next_turn(rt):
    release = trio.Event()

    async def slow_reply(request):
        # The abort takes a while: the request winds down only once released.
        with trio.CancelScope(shield=True):
            await release.wait()
        return say("never used")

    model = ScriptedModel([slow_reply, say("handled after the abort")])
    agent = await rt.create(AgentSpec("a", model))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "first")
        await trio.sleep(0.01)
        await agent.cancel()
        queued = await agent.steer("a steer sent during the abort")
        release.set()
        await agent.wait_idle()  # also waits for the activity the latched wake started
    inbox_events = [e for e in rec.of("inbox") if e.reason == "send"]
    assert inbox_events[-1].target == "next_turn" and inbox_events[-1].inserted == [queued]
    ends = rec.of("agent_end")
    assert [e.stop_reason for e in ends] == ["aborted", "completed"]
    assert agent.messages[-1].text == "handled after the abort"


async def test_a_disposed_agent_refuses_work_and_latches_nothing(rt):
    agent = await rt.create(AgentSpec("a", ScriptedModel([])))
    await agent.dispose()
    with pytest.raises(AgentDisposed):
        await agent.followup("hello?")
    with pytest.raises(AgentDisposed):
        await agent.run("hello?")
    await agent.wait_idle()
    assert agent.status == "idle"


async def test_subscriptions_end_when_the_agent_is_disposed(rt):
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("x")])))
    seen = []
    async with trio.open_nursery() as nursery:

        async def watch():
            async with agent.subscribe() as events:
                async for event in events:
                    seen.append(event.type)

        nursery.start_soon(watch)
        await trio.lowlevel.checkpoint()
        await agent.run("hi")
        await agent.dispose()
    assert seen[-1] == "status"


# -- hooks --------------------------------------------------------------------


async def test_pre_step_may_reject_and_the_input_is_not_requeued(rt):
    def guard(step):
        if "rm -rf" in step.input[0].message.text:
            return Reject("destructive request")
        return None

    model = ScriptedModel([say("fine")])
    agent = await rt.create(AgentSpec("a", model, hooks=Hooks(pre_step=guard)))
    blocked = await agent.run("rm -rf /")
    assert blocked.stop_reason == "blocked" and model.requests == []
    assert agent.inbox.next_turn == () and agent.messages == ()
    assert (await agent.run("list files")).stop_reason == "completed"


async def test_pre_step_may_replace_the_input(rt):
    model = ScriptedModel([say("ok")])
    agent = await rt.create(
        AgentSpec("a", model, hooks=Hooks(pre_step=lambda s: [s.input[0].message.text.upper()]))
    )
    await agent.run("shout")
    assert _user_texts(model.requests[0]) == ["SHOUT"]


async def test_turn_stopping_may_keep_the_turn_going(rt):
    model = ScriptedModel([say("draft"), say("reviewed")])
    reviews = []

    async def review(agent):
        if not reviews:
            reviews.append(1)
            await agent.inject("review your answer once more")

    agent = await rt.create(AgentSpec("a", model, hooks=Hooks(turn_stopping=review)))
    async with record(agent) as rec:
        result = await agent.run("write it")
    assert result.text == "reviewed"
    assert len(rec.of("turn_start")) == 1 and len(rec.of("step_start")) == 2
    assert _user_texts(model.requests[1]) == ["write it", "review your answer once more"]


async def test_on_assistant_stream_observes_the_live_stream(rt):
    seen = []
    model = ScriptedModel([say("observed")], chunk_size=3)
    agent = await rt.create(
        AgentSpec("a", model, hooks=Hooks(on_assistant_stream=lambda e: seen.append(e.type)))
    )
    await agent.run("go")
    assert seen[0] == "start" and seen[-1] == "done" and seen.count("text_delta") == 3
