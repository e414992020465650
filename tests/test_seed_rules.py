"""The seeds' remaining rules (the three design documents the project grew
from: ``dsh`` — the AgentLoop walk, sections 7.x; ``jai-mono`` — the agent
loop and its lifecycle; ``QueryEngine`` — the main loop as a state machine).
Each test names the section it covers."""

from __future__ import annotations

import trio

from agentrio import AgentSpec, Limits, ScriptedModel, ToolResultMessage
from agentrio.journal.records import MessageAppended, ToolCallFinished

from .conftest import record
from .helpers import calls, echo_tool, say, sleeper, start_run


def _results(agent):
    return [m for m in agent.messages if isinstance(m, ToolResultMessage)]


# -- permission checks do not hold allowed calls (dsh 7.9) ---------------------


async def _wait_for(recorder, predicate):
    with trio.fail_after(5):
        while not predicate(recorder):
            await trio.sleep(0.001)


async def test_an_allowed_call_runs_while_a_later_one_waits_for_approval(rt):
    """dsh 7.9 (startCall per call, pre-policy in order; only dispatch and
    bodies overlap): the allowed ``read`` before a ``write`` that waits for a
    person runs, and its result is durable, before the answer; the ``read``
    after the ``write`` is checked after it; results are committed in model
    order."""
    model = ScriptedModel(
        [calls(("read", {"text": "a"}), ("write", {"text": "b"}), ("read", {"text": "c"})), say("done")]
    )
    policy = lambda call, tool: "ask" if call.name == "write" else "allow"
    spec = AgentSpec("a", model, tools=[echo_tool("read"), echo_tool("write")], permission=policy)
    agent = await rt.create(spec)
    async with record(agent) as rec, trio.open_nursery() as nursery:
        results = start_run(nursery, agent, "go")
        await _wait_for(rec, lambda r: r.of("approval_request"))
        # The first read ends and is committed while the write still waits.
        await _wait_for(rec, lambda r: [e.result.text for e in r.of("tool_execution_end")] == ["echo: a"])
        records = (await rt.store.load_session(agent.session_id))[1]
        assert any(
            isinstance(r, MessageAppended) and getattr(r.message, "tool_call_id", None) for r in records
        ), "the finished read is durable before the approval is answered"
        assert [e.arguments["text"] for e in rec.of("tool_execution_start")] == ["a"]
        await agent.answer(rec.of("approval_request")[0].request_id, "approve")
    assert results[0].stop_reason == "completed"
    assert [r.text for r in _results(agent)] == ["echo: a", "echo: b", "echo: c"]


async def test_a_late_result_is_recorded_while_an_earlier_call_waits_for_approval(rt, autojump_clock):
    """dsh 7.9: a call that finishes while an approval is pending is made
    durable at once (recorded as finished ahead of its commit), not when the
    person answers."""
    model = ScriptedModel(
        [
            calls(("sleep", {"seconds": 1, "tag": "x"}), ("write", {"text": "b"}), ("read", {"text": "c"})),
            say("ok"),
        ]
    )
    policy = lambda call, tool: "ask" if call.name == "write" else "allow"
    agent = await rt.create(
        AgentSpec("a", model, tools=[sleeper(), echo_tool("write"), echo_tool("read")], permission=policy)
    )
    async with record(agent) as rec, trio.open_nursery() as nursery:
        results = start_run(nursery, agent, "go")
        await _wait_for(rec, lambda r: r.of("approval_request"))
        await trio.sleep(2)  # the sleep has ended; the write still waits
        assert [e.result.text for e in rec.of("tool_execution_end")] == ["slept x"]
        await agent.answer(rec.of("approval_request")[0].request_id, "deny")
    assert results[0].stop_reason == "completed"
    assert [r.text for r in _results(agent)] == ["slept x", "permission denied by the user", "echo: c"]
    assert not any(
        isinstance(r, ToolCallFinished) for r in (await rt.store.load_session(agent.session_id))[1]
    )


async def test_an_exclusive_call_still_waits_for_every_call_before_it(rt, autojump_clock):
    """dsh 7.9 (exclusive barrier), with a permission policy: the exclusive
    call, approved at once, starts only when the call before it has ended."""
    log: list = []
    model = ScriptedModel(
        [calls(("sleep", {"seconds": 1, "tag": "a"}), ("lock", {"seconds": 0, "tag": "b"})), say("ok")]
    )
    policy = lambda call, tool: "ask" if call.name == "lock" else "allow"
    tools = [sleeper(log=log), sleeper("lock", mode="exclusive", log=log)]
    agent = await rt.create(AgentSpec("a", model, tools=tools, permission=policy, limits=Limits()))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        start_run(nursery, agent, "go")
        await _wait_for(rec, lambda r: r.of("approval_request"))
        await agent.answer(rec.of("approval_request")[0].request_id, "approve")
    assert [(what, tag) for what, tag, _ in log] == [
        ("start", "a"),
        ("end", "a"),
        ("start", "b"),
        ("end", "b"),
    ]


async def test_a_tool_removed_after_validation_is_not_run(rt):
    """dsh 7.9 (re-read the live definition before each start): a tool taken
    out of the registry while its call waits for approval does not run."""
    write = echo_tool("write")
    model = ScriptedModel([calls(("write", {"text": "b"})), say("ok")])
    agent = await rt.create(AgentSpec("a", model, tools=[write], permission=lambda call, tool: "ask"))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        results = start_run(nursery, agent, "go")
        await _wait_for(rec, lambda r: r.of("approval_request"))
        del agent.tools["write"]
        await agent.answer(rec.of("approval_request")[0].request_id, "approve")
    assert results[0].stop_reason == "completed"
    (result,) = _results(agent)
    assert result.error_code == "TOOL_NOT_FOUND" and "removed" in result.text
    assert [e.mode for e in rec.of("tool_execution_start")] == [None]  # never dispatched


# -- step_end and turn_end say whether tool calls are owed (jai-mono) ----------


async def test_step_end_and_turn_end_carry_has_more_tool_calls(rt):
    """jai-mono, the event walk (turn_end hasMoreToolCalls true after a
    tool round, false after the final answer; our step is its turn)."""
    model = ScriptedModel([calls(("echo", {"text": "a"})), say("done")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    async with record(agent) as rec:
        await agent.run("go")
    assert [e.has_more_tool_calls for e in rec.of("step_end")] == [True, False]
    assert [e.has_more_tool_calls for e in rec.of("turn_end")] == [False]


async def test_a_turn_stopped_after_a_tool_round_says_tool_calls_are_owed(rt):
    """jai-mono, the iteration limit: a run stopped by its turn limit right
    after a tool round ends owing the model the results."""
    model = ScriptedModel([calls(("echo", {"text": "a"})), say("never asked")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], limits=Limits(max_turns=1)))
    async with record(agent) as rec:
        result = await agent.run("go")
    assert result.stop_reason == "max_turns"
    assert [e.has_more_tool_calls for e in rec.of("turn_end")] == [True]
