"""The seeds' remaining rules (the three design documents the project grew
from: ``dsh`` — the AgentLoop walk, sections 7.x; ``jai-mono`` — the agent
loop and its lifecycle; ``QueryEngine`` — the main loop as a state machine).
Each test names the section it covers."""

from __future__ import annotations

import attrs
import pytest
import trio

from agentrio import (
    AgentSpec,
    AssistantMessage,
    Hooks,
    Limits,
    ProviderError,
    Reject,
    ScriptedModel,
    Text,
    Tool,
    ToolResultMessage,
)
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

    def policy(call, tool):
        return "ask" if call.name == "write" else "allow"

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

    def policy(call, tool):
        return "ask" if call.name == "write" else "allow"

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

    def policy(call, tool):
        return "ask" if call.name == "lock" else "allow"

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


# -- a failed turn may leave the caller's context as it was (jai-mono) ---------


async def test_a_failed_turn_is_rolled_back_out_of_history_but_kept_in_the_journal(rt):
    """jai-mono, AgentLoopRuntime copy isolation (pitfall 1: after a network
    error or an abort the caller's history stays at its clean 10th message):
    with ``on_failure="rollback"`` a turn that fails leaves history as it was
    before it; the journal still holds its messages, and a fork at that turn
    gets them back."""
    model = ScriptedModel(
        [
            say("first answer"),
            calls(("echo", {"text": "a"})),
            ProviderError(401, "authentication_error", "bad key"),
        ]
    )
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    await agent.run("first")
    before = agent.messages
    async with record(agent) as rec:
        result = await agent.run("second", on_failure="rollback")
    assert result.stop_reason == "model_error" and result.rolled_back
    assert [m.text for m in result.new_messages][:2] == ["second", ""]  # what the turn wrote, still reported
    assert agent.messages == before
    assert [e.rolled_back for e in rec.of("turn_end")] == [3]
    # Never lost: the journal holds them, restored history does not, a fork at the turn does.
    loaded = await rt.store.load_state(agent.session_id)
    assert loaded.state.messages == list(before)
    journaled = [
        r.message.text
        for r in (await rt.store.load_session(agent.session_id))[1]
        if isinstance(r, MessageAppended)
    ]
    assert "second" in journaled and "echo: a" in journaled
    fork = await rt.fork(agent.session_id, at_turn=2)
    assert [m.text for m in fork.messages][-3:] == ["second", "", "echo: a"]


async def test_a_failed_turn_is_kept_by_default_and_the_spec_may_choose_rollback(rt):
    """jai-mono: the choice is the caller's; ``keep`` (today's repaired
    partial turn) is the default, ``AgentSpec(on_failure="rollback")`` makes
    rollback every prompt's default."""
    error = ProviderError(401, "authentication_error", "bad key")
    kept = await rt.create(AgentSpec("k", ScriptedModel([error])))
    result = await kept.run("hello")
    assert not result.rolled_back and [m.text for m in kept.messages] == ["hello"]
    rolled = await rt.create(AgentSpec("r", ScriptedModel([error]), on_failure="rollback"))
    result = await rolled.run("hello")
    assert result.rolled_back and rolled.messages == ()


async def test_an_aborted_turn_is_rolled_back(rt):
    """jai-mono (pitfall 1, the user presses ESC mid-run): an abort with
    ``on_failure="rollback"`` takes back the prompt, the call and its aborted
    result."""
    entered = trio.Event()

    async def block(args, ctx):
        entered.set()
        await trio.sleep_forever()

    blocker = Tool("block", "", {"type": "object"}, block)
    agent = await rt.create(AgentSpec("a", ScriptedModel([calls(("block", {}))]), tools=[blocker]))
    async with trio.open_nursery() as nursery:
        results = []

        async def run():
            results.append(await agent.run("go", on_failure="rollback"))

        nursery.start_soon(run)
        await entered.wait()
        await agent.cancel()
    assert results[0].stop_reason == "aborted" and results[0].rolled_back
    assert agent.messages == ()


def test_a_rollback_survives_a_snapshot_and_keeps_record_numbers():
    """The projection after a rollback: a snapshot restores the same
    history, and every message record still maps to the message it wrote
    (None for those taken back), across a later compaction."""
    from agentrio import UserMessage
    from agentrio.journal.codec import decode_state, encode_state, with_history
    from agentrio.journal.projection import SessionState
    from agentrio.journal.records import Compacted, RolledBack

    texts = iter(f"m{i}" for i in range(100))
    records = [MessageAppended(UserMessage(next(texts))) for _ in range(4)]
    records += [RolledBack(2), *(MessageAppended(UserMessage(next(texts))) for _ in range(3)), RolledBack(3)]
    records += [MessageAppended(UserMessage(next(texts))) for _ in range(2)]
    state = SessionState.replay(records)
    assert [m.text for m in state.messages] == ["m0", "m1", "m4", "m7", "m8"]
    written = [r.message for r in records if isinstance(r, MessageAppended)]
    assert [state.written_by(i) for i in range(len(written))] == [
        written[0],
        written[1],
        None,
        None,
        written[4],
        None,
        None,
        written[7],
        written[8],
    ]
    assert state.message_records == len(written)
    restored = with_history(decode_state(encode_state(state)), written[state.replaced :])
    assert restored.messages == state.messages
    # A compaction past the rolled-back ranges drops them; the mapping holds.
    state.apply(Compacted(UserMessage("summary"), 3, "manual", 10, 5))
    assert [m.text for m in state.messages] == ["summary", "m7", "m8"] and state.rolled_back == []
    assert state.written_by(7) is written[7] and state.written_by(4) is None
    restored = with_history(decode_state(encode_state(state)), written[state.replaced :])
    assert restored.messages == state.messages


# -- hooks may be chains of listeners (dsh 7.5, 7.7, 7.11) ---------------------


async def test_transforming_hooks_are_a_waterfall(rt):
    """dsh 7.5 (agent/pre-step waterfall) and 7.9 (post-policy): each
    listener gets what the one before it left, so two plugins compose."""
    seen = []

    def tag_input(step):
        seen.append([q.message.text for q in step.input])
        return [f"{q.message.text} +tagged" for q in step.input]

    def shout(step):
        seen.append([q.message.text for q in step.input])
        return [q.message.text.upper() for q in step.input]

    def redact(p):
        return ToolResultMessage(p.call.id, p.call.name, [Text(p.result.text.replace("secret", "***"))])

    def sign(p):
        return ToolResultMessage(p.call.id, p.call.name, [Text(p.result.text + " (checked)")])

    def add_note(ctx):
        ctx.system_prompt += " first"

    def add_other(ctx):
        return attrs.evolve(ctx, system_prompt=ctx.system_prompt + " second")

    model = ScriptedModel([calls(("echo", {"text": "secret"})), say("ok")])
    hooks = Hooks(
        pre_step=[tag_input, shout], post_tool=[redact, sign], prepare_context=[add_note, add_other]
    )
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], hooks=hooks, system_prompt="base"))
    await agent.run("hi")
    assert seen == [["hi"], ["hi +tagged"]]
    assert agent.messages[0].text == "HI +TAGGED"
    assert _results(agent)[0].text == "echo: *** (checked)"
    assert model.requests[0].system_prompt == "base first second"


async def test_an_answering_hook_is_serial_and_bails_on_the_first_answer(rt):
    """dsh 7.11 (agent/turn-stopping is serial; a non-empty answer bails and
    the remaining listeners are not called): the first ``choose_model``
    listener with an answer wins; a later one is never asked."""
    asked = []
    other = ScriptedModel([say("from the other model")])

    def no_opinion(route):
        asked.append("no_opinion")

    def route(route):
        asked.append("route")
        return other

    def never(route):
        asked.append("never")
        return ScriptedModel([])

    agent = await rt.create(
        AgentSpec("a", ScriptedModel([]), hooks=Hooks(choose_model=[no_opinion, route, never]))
    )
    result = await agent.run("hi")
    assert result.text == "from the other model" and asked == ["no_opinion", "route"]


async def test_a_pre_step_reject_ends_the_chain(rt):
    """dsh 7.5: a reject from any listener of the pre-step waterfall blocks
    the turn; the listeners after it are not called."""
    later = []
    hooks = Hooks(pre_step=[lambda step: Reject("no"), lambda step: later.append(step)])
    agent = await rt.create(AgentSpec("a", ScriptedModel([]), hooks=hooks))
    assert (await agent.run("hi")).stop_reason == "blocked" and later == []


async def test_request_error_listeners_pass_the_delay_down(rt, autojump_clock):
    """dsh 7.7 (agent/request-error waterfall): each listener's answer is the
    next one's ``default_delay``; the last answer decides."""
    defaults = []

    def first(err):
        defaults.append(err.default_delay)
        return 7.0

    def second(err):
        defaults.append(err.default_delay)
        return err.default_delay * 2

    model = ScriptedModel([ProviderError(529, "overloaded_error", "busy"), say("ok")])
    agent = await rt.create(AgentSpec("a", model, hooks=Hooks(on_request_error=[first, second])))
    async with record(agent) as rec:
        assert (await agent.run("hi")).text == "ok"
    assert defaults[1] == 7.0 and [e.delay for e in rec.of("request_retry")] == [14.0]


def test_a_hook_chain_is_checked_when_made():
    """Every listener of a chain must be callable; the error names the index."""
    with pytest.raises(TypeError, match=r"Hooks.post_tool\[1\]: expected a function"):
        Hooks(post_tool=[lambda p: None, "oops"])
    assert Hooks(post_tool=[print]).post_tool == (print,)


# -- the runtime announces its agents (dsh 7.1, 7.2) ---------------------------


async def test_the_runtime_announces_agents_created_failed_restarted_and_ended():
    """dsh 7.2 (publish announces the agent; teardown detaches it): hosts
    learn of agents from ``rt.subscribe()`` and ``registry.listen`` instead
    of polling the registry."""
    from agentrio import Runtime

    def broken(ctx):
        raise RuntimeError("plugin bug")

    heard = []
    async with Runtime() as rt:
        stop = rt.registry.listen(lambda event: heard.append(event.type))
        async with rt.subscribe() as events:
            parent = await rt.create(AgentSpec("parent", ScriptedModel([])))
            spec = AgentSpec(
                "child", ScriptedModel([]), hooks=Hooks(prepare_context=broken), restart="on_crash"
            )
            child = await rt.create(spec, parent=parent)
            assert (await child.run("go")).stop_reason == "error"
            await child.dispose()
            stop()
            await parent.dispose()
            got = []
            while len(got) < 6:
                got.append(await events.__anext__())
    assert [(e.type, e.name) for e in got] == [
        ("agent_created", "parent"),
        ("agent_created", "child"),
        ("agent_failed", "child"),
        ("agent_restarted", "child"),
        ("agent_ended", "child"),
        ("agent_ended", "parent"),
    ]
    created_child = got[1]
    assert created_child.parent_id == parent.id and created_child.session_id == child.session_id
    assert got[2].error.startswith("RuntimeError") and got[2].restarted
    assert [e.seq for e in got] == sorted(e.seq for e in got)
    assert heard == [e.type for e in got[:5]]  # stopped before the parent ended


async def test_a_runtime_subscriber_that_lags_is_told_what_it_missed(monkeypatch):
    """Bounded like an agent's subscription: past its capacity a reader
    gets a ``lagged`` event counting the dropped events, then live ones."""
    from agentrio import Runtime
    from agentrio.supervisors import lifecycle

    monkeypatch.setattr(lifecycle, "RUNTIME_SUBSCRIBER_CAPACITY", 2)
    async with Runtime() as rt, rt.subscribe() as events:
        for name in "abcd":
            await rt.create(AgentSpec(name, ScriptedModel([])))
        got = [await events.__anext__() for _ in range(3)]
        await rt.create(AgentSpec("e", ScriptedModel([])))
        got.append(await events.__anext__())
    assert [(e.type, getattr(e, "name", None)) for e in got] == [
        ("agent_created", "a"),
        ("agent_created", "b"),
        ("lagged", None),
        ("agent_created", "e"),
    ]
    assert got[2].dropped == 2


# -- overflow reported as a stop reason is recovered (jai-mono) ----------------


async def test_a_stream_that_stops_for_context_overflow_compacts_and_retries_once(rt):
    """jai-mono (contextOverflow: leave the cut message's calls unrun and
    compact before going on): a reply whose stop reason is
    ``context_overflow`` is withdrawn, history compacted, the request sent
    again once."""
    overflow = AssistantMessage([Text("partial")], stop_reason="context_overflow")
    model = ScriptedModel([say("a" * 400), say("b" * 400), overflow, say("summary"), say("recovered")])
    agent = await rt.create(AgentSpec("a", model, limits=Limits(keep_recent_tokens=10)))
    await agent.run("one")
    await agent.run("two")
    async with record(agent) as rec:
        result = await agent.run("three")
    assert result.stop_reason == "completed" and result.text == "recovered"
    assert [e.reason for e in rec.of("compaction_start")] == ["overflow"]
    assert [e.reason for e in rec.of("message_discard")] == ["context_overflow"]
    assert "partial" not in [m.text for m in agent.messages]


async def test_a_second_overflow_stop_ends_the_run(rt):
    """Once only: an overflow again after compacting stops the run
    ``context_overflow``."""
    overflow = AssistantMessage([Text("")], stop_reason="context_overflow")
    model = ScriptedModel([say("a" * 400), say("b" * 400), overflow, say("summary"), overflow])
    agent = await rt.create(AgentSpec("a", model, limits=Limits(keep_recent_tokens=10)))
    await agent.run("one")
    await agent.run("two")
    result = await agent.run("three")
    assert result.stop_reason == "context_overflow" and len(model.requests) == 5


# -- the system prompt is journaled and restored (dsh 7.6) ---------------------


async def test_the_system_prompt_is_journaled_once_and_a_restored_session_keeps_it(tmp_path):
    """dsh 7.6 (each attempt renders the system prompt and commits
    system/message): the prompt a session's requests are built on is
    journaled once per change (by digest); a restored session goes on with
    it, and says so when the spec's prompt differs."""
    from agentrio import Runtime, SQLiteStore
    from agentrio.journal.records import SystemPromptSet, prompt_digest

    db = tmp_path / "s.db"
    async with SQLiteStore(db) as store, Runtime(store) as rt:
        agent = await rt.create(
            AgentSpec("a", ScriptedModel([say("1"), say("2")]), system_prompt="be brief"), session_id="s1"
        )
        await agent.run("one")
        await agent.run("two")
        records = (await store.load_session("s1"))[1]
        assert [r for r in records if isinstance(r, SystemPromptSet)] == [
            SystemPromptSet("be brief", prompt_digest("be brief"))
        ]
        await agent.dispose()
    model = ScriptedModel([say("3")])
    async with SQLiteStore(db) as store, Runtime(store) as rt:
        agent = await rt.create(AgentSpec("a", model, system_prompt="be verbose"), session_id="s1")
        async with record(agent) as rec:
            await agent.run("three")
    assert model.requests[0].system_prompt == "be brief"
    (notice,) = rec.of("notice")
    assert notice.kind == "system_prompt_differs" and prompt_digest("be brief") in notice.text


async def test_a_restored_session_with_the_same_prompt_says_nothing(tmp_path):
    from agentrio import Runtime, SQLiteStore

    db = tmp_path / "s.db"
    for reply in ("1", "2"):
        async with SQLiteStore(db) as store, Runtime(store) as rt:
            agent = await rt.create(
                AgentSpec("a", ScriptedModel([say(reply)]), system_prompt="p"), session_id="s1"
            )
            async with record(agent) as rec:
                await agent.run("go")
    assert rec.of("notice") == []


# -- state transitions are durable (QueryEngine: EngineState) ------------------


async def test_every_state_transition_is_journaled_in_order(rt):
    """QueryEngine, EngineState ("用户中断可能留下半状态" — without a state
    machine an interrupt leaves half a state): each transition is a record,
    in the order of the ``state`` events, and the projection knows the last."""
    from agentrio.journal.records import StateEntered

    model = ScriptedModel([calls(("echo", {"text": "a"})), say("done")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    async with record(agent) as rec:
        await agent.run("go")
    records = (await rt.store.load_session(agent.session_id))[1]
    journaled = [r.name for r in records if isinstance(r, StateEntered)]
    assert journaled == rec.states() and journaled[-1] == "done" and len(journaled) == 9
    assert (await rt.store.load_state(agent.session_id)).state.machine_state == "done"


# -- smaller rules --------------------------------------------------------------


async def test_driving_the_agent_from_setup_is_refused_instead_of_hanging_create(rt):
    """dsh 7.1 (setup "only composes, never drives": receiving the agent does
    not mean it may be prompted early): ``create`` fails at once with an
    error that says so, and nothing is left registered."""

    async def setup(agent, scope):
        await agent.steer("too early")

    with (
        trio.fail_after(5),
        pytest.raises(RuntimeError, match="setup may compose the agent .* but not drive it"),
    ):
        await rt.create(AgentSpec("a", ScriptedModel([])), setup=setup)
    assert len(rt.registry) == 0


async def test_a_hook_cancel_carries_its_reason(rt):
    """dsh 7.8 (causes are user/parent/hook(reason)/disposed; turn/end
    copies them): the reason reaches the result, the turn_end and the
    journal."""
    from agentrio.journal.records import TurnEnded

    async def stop_it(step):
        await step.agent.cancel("hook", reason="budget guard: too many steps")

    agent = await rt.create(AgentSpec("a", ScriptedModel([say("x")]), hooks=Hooks(pre_step=stop_it)))
    async with record(agent) as rec:
        result = await agent.run("go")
    assert result.stop_reason == "aborted" and result.cancel_cause == "hook: budget guard: too many steps"
    assert rec.of("turn_end")[0].cancel_cause == result.cancel_cause
    ended = [r for r in (await rt.store.load_session(agent.session_id))[1] if isinstance(r, TurnEnded)]
    assert ended[-1].cancel_cause == result.cancel_cause


async def test_withdrawing_input_a_turn_claimed_returns_false(rt):
    """dsh 7.4 (claimed input can no longer be withdrawn through
    inbox.remove): True while it waits, False once a turn took it."""
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("1")])))
    queued = await agent.inject("context")
    assert await agent.withdraw(queued.id) is True
    queued = await agent.followup("go")
    await agent.wait_idle()
    assert await agent.withdraw(queued.id) is False


async def test_an_idle_wake_whose_input_was_withdrawn_opens_no_turn(rt):
    """dsh 7.4 (a wake during maintenance is latched): when the input that
    woke the agent is withdrawn before the latch is served, no turn opens."""
    release = trio.Event()
    agent = await rt.create(AgentSpec("a", ScriptedModel([])))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        nursery.start_soon(agent.run_maintenance, release.wait)
        await trio.sleep(0.01)
        queued = await agent.steer("never mind")
        assert await agent.withdraw(queued.id) is True
        release.set()
        await agent.wait_idle()
    assert rec.of("turn_start") == [] and rec.of("agent_start") == [] and agent.messages == ()


async def test_a_second_failure_while_closing_a_failed_run_keeps_the_first_error():
    """dsh 7.10 (a repair that fails itself keeps the original failure, and
    step/end is still attempted): ``RunResult.error`` names the run's own
    failure first, the closing one as context."""
    from agentrio import MemoryStore, Runtime, StoreError

    class FailingStore(MemoryStore):
        failing = False

        async def sync(self, session_id):
            if self.failing:
                raise StoreError("the lease on this session was lost")
            await super().sync(session_id)

    store = FailingStore()

    def broken(ctx):
        store.failing = True
        raise RuntimeError("plugin bug")

    async with Runtime(store) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([]), hooks=Hooks(prepare_context=broken)))
        result = await agent.run("go")
    assert result.stop_reason == "error"
    assert result.error.startswith("RuntimeError: plugin bug (then, while closing the run: StoreError")


# -- goals start turns by themselves (dsh 7.11: goals + goal-round-driver) -----


async def test_a_goal_keeps_starting_turns_until_the_model_says_it_is_met(rt):
    """dsh 7.11 ("一段长期目标自动续轮": goals drive further turns without
    changing the loop): turns start by themselves until a reply ends with
    the marker; visible in events and the journal."""
    from agentrio.actors.goals import GOAL_MET
    from agentrio.journal.records import GoalEnded, GoalSet

    model = ScriptedModel([say("step one done"), say("step two done"), say(f"all done\n{GOAL_MET}")])
    agent = await rt.create(AgentSpec("a", model))
    async with record(agent) as rec:
        await agent.set_goal("make the tests pass")
        await agent.wait_idle()
    assert len(model.requests) == 3
    assert [e.type for e in rec.events if e.type.startswith("goal_")] == ["goal_start", "goal_end"]
    assert rec.of("goal_end")[0].reason == "met" and rec.of("goal_end")[0].turns == 3
    assert len(rec.of("turn_start")) == 3
    assert "make the tests pass" in model.requests[2].messages[-1].text
    records = (await rt.store.load_session(agent.session_id))[1]
    assert [type(r) for r in records if isinstance(r, GoalSet | GoalEnded)] == [GoalSet, GoalEnded]
    assert (await rt.store.load_state(agent.session_id)).state.goal is None


async def test_a_goal_stops_at_its_turn_budget_or_at_a_turn_that_fails(rt):
    """dsh 7.11: the budget ends a goal the model never declares met; a
    turn that does not complete ends it with that turn's stop reason."""
    model = ScriptedModel([say("trying"), say("still trying"), say("never asked")])
    agent = await rt.create(AgentSpec("a", model))
    async with record(agent) as rec:
        await agent.set_goal("an endless task", max_turns=2)
        await agent.wait_idle()
    assert len(model.requests) == 2
    assert [(e.reason, e.turns) for e in rec.of("goal_end")] == [("max_turns", 2)]

    failing = await rt.create(
        AgentSpec("b", ScriptedModel([ProviderError(401, "authentication_error", "bad key")]))
    )
    async with record(failing) as rec:
        await failing.set_goal("anything")
        await failing.wait_idle()
    assert [(e.reason, e.turns) for e in rec.of("goal_end")] == [("model_error", 1)]


async def test_queued_input_is_replaced_in_place_by_id(rt):
    """dsh 7.4 (replace/remove go by the pending message's identity): the
    replacement keeps the id, its place and the ``run()`` waiting for it;
    claimed input cannot be replaced."""
    release = trio.Event()

    async def slow(request):
        await release.wait()
        return say("first")

    model = ScriptedModel([slow, lambda request: say(f"answered {request.messages[-1].text}")])
    agent = await rt.create(AgentSpec("a", model))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        start_run(nursery, agent, "one")
        await _wait_for(rec, lambda r: r.of("turn_start"))
        second = start_run(nursery, agent, "two")
        await _wait_for(
            rec, lambda r: any(q.message.text == "two" for e in r.of("inbox") for q in e.inserted)
        )
        (queued,) = [q for e in rec.of("inbox") for q in e.inserted if q.message.text == "two"]
        assert await agent.replace(queued.id, "two, reworded") is True
        release.set()
    assert second[0].text == "answered two, reworded"
    assert [m.text for m in agent.messages] == ["one", "first", "two, reworded", "answered two, reworded"]
    assert await agent.replace(queued.id, "too late") is False


async def test_live_events_carry_the_attempt_they_come_from(rt, autojump_clock):
    """dsh 7.6 (live frames carry a process-local attemptId): the deltas of a
    withdrawn attempt and of its retry name different attempts, and the
    discard names the one withdrawn."""
    from agentrio.models.events import StreamStart, TextDelta, TextStart

    class DropsOnce:
        def __init__(self):
            self.calls = 0

        async def stream(self, request):
            self.calls += 1
            yield StreamStart()
            yield TextStart(0)
            yield TextDelta(0, "partial")
            if self.calls == 1:
                raise ProviderError(type="connection_error", message="dropped")
            async for event in ScriptedModel([say(" done")]).stream(request):
                if not isinstance(event, StreamStart):
                    yield event

    model = DropsOnce()
    model.retry_policy = type("P", (), {"delay": lambda self, e, a: 0.1 if a == 1 else None})()
    agent = await rt.create(AgentSpec("a", model))
    async with record(agent) as rec:
        await agent.run("go")
    starts = [e.attempt for e in rec.of("message_start") if e.role == "assistant"]
    assert len(starts) == 2 and starts[0] != starts[1] and None not in starts
    assert [e.attempt for e in rec.of("message_discard")] == [starts[0]]
    assert {e.attempt for e in rec.of("message_update")} == set(starts)


async def test_a_failed_request_leaves_a_marker_in_the_journal_not_an_empty_message(rt):
    """jai-mono (the empty-shell assistant message an error leaves breaks the
    next request: "messages.1.content must not be empty"): history stays
    provider-valid, and the journal records that the request failed."""
    from agentrio.journal.records import RequestFailed

    agent = await rt.create(
        AgentSpec("a", ScriptedModel([ProviderError(401, "authentication_error", "bad key")]))
    )
    result = await agent.run("go")
    assert result.stop_reason == "model_error" and [m.role for m in agent.messages] == ["user"]
    (marker,) = [
        r for r in (await rt.store.load_session(agent.session_id))[1] if isinstance(r, RequestFailed)
    ]
    assert "bad key" in marker.error and marker.stop_reason == "error"


async def test_the_protocol_violation_hook_may_replace_the_repair_requests_context(rt):
    """jai-mono (``attemptContext = appendProtocolRepairMessage(directive?.context
    ?? prepared)``): a ``RequestContext`` from the hook is what the repair
    request is built from, the default repair text after it; history is not
    touched."""
    from agentrio import RequestContext, UserMessage
    from agentrio.actors.activity import PROTOCOL_REPAIR

    fake = "<tool_call>{}</tool_call>"

    def narrow(message):
        return RequestContext("repair mode", [UserMessage("just call echo")], [echo_tool().spec])

    model = ScriptedModel([say(fake), say("fixed")])
    agent = await rt.create(
        AgentSpec("a", model, tools=[echo_tool()], hooks=Hooks(on_protocol_violation=narrow))
    )
    assert (await agent.run("go")).text == "fixed"
    repair = model.requests[1]
    assert repair.system_prompt == "repair mode"
    assert [m.text for m in repair.messages] == ["just call echo", PROTOCOL_REPAIR]
    assert [m.text for m in agent.messages] == ["go", "fixed"]
