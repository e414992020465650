"""Scheduling tool calls: a rolling bounded pool, exclusive barriers, and
results committed in the order the model asked for them."""

import attrs
import pytest
import trio

from agentrio import AgentSpec, Hooks, Limits, ScriptedModel, Text, Tool, ToolResult, ToolResultMessage
from agentrio.journal.codec import encode_record
from agentrio.journal.records import MessageAppended, ToolCallFinished, ToolCallStarted

from .conftest import record
from .helpers import calls, say, sleeper


def overlapping(log):
    """The largest number of calls running at once, from a start/end log."""
    running = peak = 0
    for kind, _, _ in sorted(log, key=lambda e: (e[2], e[0] == "start")):
        running += 1 if kind == "start" else -1
        peak = max(peak, running)
    return peak


async def test_parallel_calls_run_in_a_rolling_bounded_pool(rt, autojump_clock):
    log = []
    durations = [5, 1, 1, 1, 1, 1]
    model = ScriptedModel(
        [calls(*[("sleep", {"seconds": d, "tag": str(i)}) for i, d in enumerate(durations)]), say("ok")]
    )
    spec = AgentSpec("a", model, tools=[sleeper(log=log)], limits=Limits(max_parallel_tool_calls=2))
    agent = await rt.create(spec)
    start = trio.current_time()
    await agent.run("go")
    assert overlapping(log) == 2
    starts = {tag: t - start for kind, tag, t in log if kind == "start"}
    # Rolling, not batched: call 2 starts as soon as call 1 ends, while call 0 still runs.
    assert starts == {"0": 0, "1": 0, "2": 1, "3": 2, "4": 3, "5": 4}
    assert trio.current_time() - start == pytest.approx(5)


async def test_an_exclusive_call_is_a_barrier_and_runs_alone(rt, autojump_clock):
    log = []
    model = ScriptedModel(
        [
            calls(
                ("sleep", {"seconds": 2, "tag": "p1"}),
                ("sleep", {"seconds": 3, "tag": "p2"}),
                ("exclusive", {"seconds": 1, "tag": "x"}),
                ("sleep", {"seconds": 1, "tag": "p3"}),
                ("sleep", {"seconds": 1, "tag": "p4"}),
            ),
            say("ok"),
        ]
    )
    tools = [sleeper(log=log), sleeper("exclusive", mode="exclusive", log=log)]
    agent = await rt.create(AgentSpec("a", model, tools=tools))
    await agent.run("go")
    times = {(kind, tag): t for kind, tag, t in log}
    assert times["start", "x"] == max(times["end", "p1"], times["end", "p2"])
    assert times["start", "p3"] == times["end", "x"] and times["start", "p4"] == times["end", "x"]
    assert overlapping([e for e in log if e[1] in ("p3", "p4")]) == 2  # parallel again after the barrier


async def test_sequential_execution_runs_every_call_alone_in_model_order(rt, autojump_clock):
    log = []
    model = ScriptedModel(
        [calls(*[("sleep", {"seconds": d, "tag": str(i)}) for i, d in enumerate([3, 1, 2])]), say("ok")]
    )
    spec = AgentSpec("a", model, tools=[sleeper(log=log)], limits=Limits(tool_execution="sequential"))
    agent = await rt.create(spec)
    async with record(agent) as rec:
        await agent.run("go")
    assert [(kind, tag) for kind, tag, _ in log] == [
        ("start", "0"),
        ("end", "0"),
        ("start", "1"),
        ("end", "1"),
        ("start", "2"),
        ("end", "2"),
    ]
    # Each result is committed before the next call starts.
    order = [e.type for e in rec.events if e.type in ("tool_execution_start", "message_end")][2:]
    assert order == ["tool_execution_start", "message_end"] * 3 + ["message_end"]


async def test_deferred_context_reaches_the_next_request_after_the_results_in_model_order(rt, autojump_clock):
    async def note(args, ctx):
        await trio.sleep(args["seconds"])
        return ToolResult(f"noted {args['tag']}", context=f"context from {args['tag']}")

    noting = Tool(
        "note",
        "Note.",
        {"type": "object", "properties": {"seconds": {"type": "number"}, "tag": {"type": "string"}}},
        note,
    )
    model = ScriptedModel(
        [calls(("note", {"seconds": 2, "tag": "a"}), ("note", {"seconds": 1, "tag": "b"})), say("ok")]
    )
    agent = await rt.create(AgentSpec("a", model, tools=[noting]))
    async with record(agent) as rec:
        await agent.run("go")
    assert [m.text for m in model.requests[1].messages[2:]] == [
        "noted a",
        "noted b",
        "context from a",
        "context from b",  # b ended first, yet comes second
    ]
    assert [
        e.inserted[0].message.text for e in rec.of("inbox") if e.target == "next_step" and e.inserted
    ] == [
        "context from a",
        "context from b",
    ]
    assert [m.role for m in agent.messages] == [
        "user",
        "assistant",
        "tool_result",
        "tool_result",
        "user",
        "user",
        "assistant",
    ]


def _secret_tool():
    async def leak(args, ctx):
        await trio.sleep(args["seconds"])
        return f"{args['tag']}: password=hunter2"

    schema = {"type": "object", "properties": {"seconds": {"type": "number"}, "tag": {"type": "string"}}}
    return Tool("leak", "Leaks.", schema, leak)


async def test_post_tool_redacts_each_result_before_it_is_journaled_or_seen(rt, autojump_clock):
    seen = []

    def redact(p):
        seen.append(p.call.id)
        return attrs.evolve(
            p.result, content=[Text(p.result.text.replace("hunter2", "[redacted]"))], tool_call_id="forged"
        )

    batch = calls(("leak", {"seconds": 2, "tag": "a"}), ("leak", {"seconds": 1, "tag": "b"}), ("nope", {}))
    model = ScriptedModel([batch, say("ok")])
    agent = await rt.create(AgentSpec("a", model, tools=[_secret_tool()], hooks=Hooks(post_tool=redact)))
    async with record(agent) as rec:
        await agent.run("go")
    ids = [c.id for c in batch.tool_calls]
    # Every result, the refused call's too, in model order though "b" ended first (dsh 7.9).
    assert seen == ids
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.text) for r in results[:2]] == [
        (ids[0], "a: password=[redacted]"),
        (ids[1], "b: password=[redacted]"),
    ]
    assert [e.result.text for e in rec.of("tool_execution_end")][:2] == [
        "a: password=[redacted]",
        "b: password=[redacted]",
    ]
    _, records = await rt.store.load_session(agent.session_id)
    # With the hook, "b" is not recorded ahead of its turn: it goes through the hook first, in model order.
    assert not any(isinstance(r, ToolCallFinished) for r in records)
    assert not any("hunter2" in encode_record(r) for r in records)


@pytest.mark.parametrize(
    "hook, error",
    [
        (lambda p: 1 / 0, "the post_tool hook failed: ZeroDivisionError"),
        (lambda p: "redacted", "the post_tool hook returned str, not a ToolResultMessage"),
    ],
)
async def test_a_failing_post_tool_hook_withholds_the_result(rt, hook, error):
    model = ScriptedModel([calls(("leak", {"seconds": 0, "tag": "a"})), say("ok")])
    agent = await rt.create(AgentSpec("a", model, tools=[_secret_tool()], hooks=Hooks(post_tool=hook)))
    assert (await agent.run("go")).stop_reason == "completed"
    result = agent.messages[2]
    assert result.is_error and result.error_code == "TOOL_FAILED" and result.text.startswith(error)
    assert "hunter2" not in repr(agent.messages)


def test_tool_execution_is_parallel_or_sequential():
    with pytest.raises(ValueError, match="Limits.tool_execution: expected one of"):
        Limits(tool_execution="serial")


async def test_results_are_committed_in_model_order_when_later_calls_finish_first(rt, autojump_clock):
    log = []
    model = ScriptedModel(
        [calls(*[("sleep", {"seconds": s, "tag": t}) for t, s in [("a", 3), ("b", 1), ("c", 2)]]), say("ok")]
    )
    agent = await rt.create(AgentSpec("a", model, tools=[sleeper(log=log)]))
    async with record(agent) as rec:
        await agent.run("go")
    assert [tag for kind, tag, _ in log if kind == "end"] == ["b", "c", "a"]
    assert [e.result.text for e in rec.of("tool_execution_end")] == ["slept a", "slept b", "slept c"]
    results = [e.message.text for e in rec.of("message_end") if isinstance(e.message, ToolResultMessage)]
    assert results == ["slept a", "slept b", "slept c"]
    _, records = await rt.store.load_session(agent.session_id)
    journaled = [
        r.message.text
        for r in records
        if isinstance(r, MessageAppended) and isinstance(r.message, ToolResultMessage)
    ]
    assert journaled == ["slept a", "slept b", "slept c"]
    assert [m.text for m in agent.messages if isinstance(m, ToolResultMessage)] == journaled
    # Durations are real even though commits waited for call "a".
    assert [round(e.duration) for e in rec.of("tool_execution_end")] == [3, 1, 2]


async def test_each_call_is_journaled_as_started_before_its_body_runs(rt):
    seen_started = []

    async def check(args, ctx):
        _, records = await rt.store.load_session(ctx.session_id)
        seen_started.append(
            any(isinstance(r, ToolCallStarted) and r.tool_call_id == ctx.tool_call_id for r in records)
        )
        return "ok"

    from agentrio import Tool

    probe = Tool("probe", "", {"type": "object"}, check)
    model = ScriptedModel([calls(("probe", {}), ("probe", {})), say("ok")])
    agent = await rt.create(AgentSpec("a", model, tools=[probe]))
    await agent.run("go")
    assert seen_started == [True, True]


async def test_the_execution_mode_is_re_read_before_each_dispatch(rt, autojump_clock):
    log = []
    slow = sleeper(log=log)

    async def lock_down(args, ctx):
        slow.execution_mode = "exclusive"
        return "from now on, sleeping is exclusive"

    from agentrio import Tool

    switch = Tool("switch", "", {"type": "object"}, lock_down, execution_mode="exclusive")
    model = ScriptedModel(
        [
            calls(
                ("switch", {}), ("sleep", {"seconds": 1, "tag": "a"}), ("sleep", {"seconds": 1, "tag": "b"})
            ),
            say("ok"),
        ]
    )
    agent = await rt.create(AgentSpec("a", model, tools=[switch, slow]))
    await agent.run("go")
    assert overlapping(log) == 1  # the two sleeps no longer overlap


async def test_a_tool_replaced_mid_batch_is_used_for_calls_not_yet_dispatched(rt):
    from agentrio import Tool

    async def old(args, ctx):
        agent.tools["echo"] = Tool("echo", "", {"type": "object"}, new, execution_mode="exclusive")
        return "old"

    async def new(args, ctx):
        return "new"

    model = ScriptedModel([calls(("echo", {}), ("echo", {})), say("ok")])
    agent = await rt.create(
        AgentSpec("a", model, tools=[Tool("echo", "", {"type": "object"}, old, execution_mode="exclusive")])
    )
    await agent.run("go")
    assert [m.text for m in agent.messages if isinstance(m, ToolResultMessage)] == ["old", "new"]


async def test_tool_progress_is_reported_as_updates(rt):
    from agentrio import Tool

    async def work(args, ctx):
        for i in range(3):
            ctx.report({"done": i + 1, "of": 3})
            await trio.lowlevel.checkpoint()
        return "finished"

    model = ScriptedModel([calls(("work", {})), say("ok")])
    agent = await rt.create(AgentSpec("a", model, tools=[Tool("work", "", {"type": "object"}, work)]))
    async with record(agent) as rec:
        await agent.run("go")
    updates = rec.of("tool_execution_update")
    assert [u.progress for u in updates] == [{"done": 1, "of": 3}, {"done": 2, "of": 3}, {"done": 3, "of": 3}]
    types = rec.types(skip=("state", "inbox", "status", "message_update", "message_start", "message_end"))
    assert (
        types.index("tool_execution_start")
        < types.index("tool_execution_update")
        < types.index("tool_execution_end")
    )


async def test_a_tool_may_conclude_the_turn(rt):
    from agentrio import Tool, ToolResult

    async def finish(args, ctx):
        return ToolResult("final report filed", concludes_turn=True)

    model = ScriptedModel([calls(("finish", {}))])  # no second reply: none must be requested
    agent = await rt.create(AgentSpec("a", model, tools=[Tool("finish", "", {"type": "object"}, finish)]))
    result = await agent.run("go")
    assert result.stop_reason == "completed" and len(model.requests) == 1
