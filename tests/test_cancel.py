"""Cancel: structured abort at every state, leaving a valid history and
nothing of ours running."""

import threading
import time

import attrs
import pytest
import trio
import trio.lowlevel

from agentrio import (
    ABORTED_BEFORE_DISPATCH,
    AgentSpec,
    AssistantMessage,
    Hooks,
    Limits,
    ProviderError,
    ScriptedModel,
    Text,
    Tool,
    ToolResultMessage,
)
from agentrio.messages import TOOL_ABORTED
from agentrio.models import StreamStart, TextDelta, TextStart, ToolCallDelta, ToolCallStart

from .conftest import record
from .helpers import calls, say, sleeper, start_run


@attrs.define
class Scenario:
    """Where the agent will be blocked when the cancel arrives."""

    reached: trio.Event = attrs.field(factory=trio.Event)
    running: set = attrs.field(factory=set)  # tools whose body has not ended

    async def block(self, name="blocked", once=True):
        """Hang; with ``once``, only the first time (later calls pass through)."""
        if once and self.reached.is_set():
            return
        self.running.add(name)
        try:
            self.reached.set()
            await trio.sleep_forever()
        finally:
            self.running.discard(name)

    def blocking_tool(self, name, mode="parallel"):
        async def execute(args, ctx):
            await self.block(f"{name}:{ctx.tool_call_id}", once=False)

        return Tool(name, "", {"type": "object"}, execute, execution_mode=mode)


def quick_tool(name="quick"):
    async def execute(args, ctx):
        return "quick result"

    return Tool(name, "", {"type": "object"}, execute)


class BlockingStream(ScriptedModel):
    """Streams some events of its first reply, then hangs."""

    def __init__(self, scenario, events):
        super().__init__([say("after the cancel")])
        self.scenario, self.events = scenario, events

    async def stream(self, request):
        if self.events is None:
            async for event in super().stream(request):
                yield event
            return
        events, self.events = self.events, None
        self.requests.append(request)
        for event in events:
            yield event
        await self.scenario.block()


def build(case, s: Scenario):
    """The spec for each place a cancel can land, plus what the history must show."""
    after = say("after the cancel")
    if case == "build_context":
        return AgentSpec("a", ScriptedModel([after]), hooks=Hooks(prepare_context=lambda c: s.block()))
    if case == "pre_step":
        return AgentSpec("a", ScriptedModel([after]), hooks=Hooks(pre_step=lambda p: s.block()))
    if case == "call_model_before_stream":
        return AgentSpec("a", ScriptedModel([lambda r: s.block(), after]))
    if case == "mid_stream_text":
        events = [StreamStart(), TextStart(0), TextDelta(0, "I was saying")]
        return AgentSpec("a", BlockingStream(s, events))
    if case == "mid_stream_tool_call":
        events = [StreamStart(), ToolCallStart(0, "c1", "quick"), ToolCallDelta(0, '{"pa')]
        return AgentSpec("a", BlockingStream(s, events), tools=[quick_tool()])
    if case == "retry_back_off":
        model = ScriptedModel([ProviderError(529, "overloaded_error", "busy"), after])
        model.retry_policy = type("P", (), {"delay": lambda self, e, a: (s.reached.set(), 3600)[1]})()
        return AgentSpec("a", model)
    if case == "check_permission":
        return AgentSpec(
            "a",
            ScriptedModel([calls(("quick", {})), after]),
            tools=[quick_tool()],
            permission=lambda call, tool: s.block(),
        )
    if case == "awaiting_approval":
        return AgentSpec(
            "a",
            ScriptedModel([calls(("quick", {})), after]),
            tools=[quick_tool()],
            permission=lambda c, t: "ask",
        )
    if case == "execute_parallel":
        model = ScriptedModel([calls(("quick", {}), ("block", {}), ("block", {}), ("quick", {})), after])
        return AgentSpec(
            "a",
            model,
            tools=[quick_tool(), s.blocking_tool("block")],
            limits=Limits(max_parallel_tool_calls=2),
        )
    if case == "execute_exclusive":
        model = ScriptedModel([calls(("quick", {}), ("block", {}), ("quick", {})), after])
        return AgentSpec("a", model, tools=[quick_tool(), s.blocking_tool("block", mode="exclusive")])
    if case == "turn_stopping":
        return AgentSpec(
            "a", ScriptedModel([say("almost"), after]), hooks=Hooks(turn_stopping=lambda a: s.block())
        )
    raise AssertionError(case)


CASES = [
    "build_context",
    "pre_step",
    "call_model_before_stream",
    "mid_stream_text",
    "mid_stream_tool_call",
    "retry_back_off",
    "check_permission",
    "awaiting_approval",
    "execute_parallel",
    "execute_exclusive",
    "turn_stopping",
]


@pytest.mark.parametrize("case", CASES)
async def test_cancel_at_every_state_leaves_a_valid_history_and_nothing_running(rt, case):
    s = Scenario()
    spec = build(case, s)
    agent = await rt.create(spec)
    async with record(agent) as rec, trio.open_nursery() as nursery:
        results = start_run(nursery, agent, "do the task")
        if case == "awaiting_approval":
            while not rec.of("approval_request"):
                await trio.lowlevel.checkpoint()
        else:
            await s.reached.wait()
        await agent.cancel()
        await agent.wait_idle()

    assert results[0].stop_reason == "aborted"
    assert s.running == set(), "a tool is still running"
    assert agent.running_tools == (), "a worker task is still running"
    assert agent.status == "idle"
    types = rec.types()
    assert types[-2:] == ["turn_end", "agent_end"]
    assert rec.of("turn_end")[-1].stop_reason == "aborted"
    # Every tool call in history has its result.
    history = list(agent.messages)
    called = [c.id for m in history if isinstance(m, AssistantMessage) for c in m.tool_calls]
    answered = [m.tool_call_id for m in history if isinstance(m, ToolResultMessage)]
    assert sorted(called) == sorted(answered)
    # The strict model accepts the next request.
    assert (await agent.run("carry on")).stop_reason == "completed"
    assert agent.messages[-1].text == "after the cancel"


async def test_input_claimed_but_not_yet_admitted_never_reaches_the_model(rt):
    s = Scenario()
    agent = await rt.create(build("pre_step", s))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "claimed, then cancelled")
        await s.reached.wait()
        await agent.cancel()
    assert agent.messages == () and agent.inbox.next_turn == ()
    await agent.run("next")
    assert [m.text for m in agent.spec.model.requests[0].messages] == ["next"]


async def test_an_interrupted_stream_keeps_its_visible_text(rt):
    s = Scenario()
    agent = await rt.create(build("mid_stream_text", s))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "go")
        await s.reached.wait()
        await agent.cancel()
    interrupted = agent.messages[-1]
    assert interrupted.content == [Text("I was saying")] and interrupted.stop_reason == "aborted"
    assert rec.of("message_end")[-1].message == interrupted
    assert rec.of("message_discard") == []


async def test_a_partial_tool_call_never_runs(rt):
    s = Scenario()
    agent = await rt.create(build("mid_stream_tool_call", s))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "go")
        await s.reached.wait()
        await agent.cancel()
    assert rec.of("tool_execution_start") == []
    assert [m.role for m in agent.messages] == ["user"]
    assert [e.reason for e in rec.of("message_discard")] == ["aborted"]  # the empty bubble is withdrawn


async def test_started_tools_are_aborted_and_undispatched_ones_never_start(rt):
    s = Scenario()
    agent = await rt.create(build("execute_parallel", s))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "go")
        await s.reached.wait()
        await trio.sleep(0.01)
        await agent.cancel()
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    # quick finished, block #1 was running, block #2 was running, quick #2 was never dispatched
    assert [r.text.split(":")[0] for r in results] == [
        "quick result",
        TOOL_ABORTED,
        TOOL_ABORTED,
        ABORTED_BEFORE_DISPATCH,
    ]
    starts = [e.tool_call_id for e in rec.of("tool_execution_start")]
    ends = [e.tool_call_id for e in rec.of("tool_execution_end")]
    assert starts == ends  # each call has a start/end pair, in model order


async def test_cancel_clears_the_inbox_unless_kept(rt):
    s = Scenario()
    agent = await rt.create(build("build_context", s))
    async with record(agent) as rec, trio.open_nursery() as nursery:
        results = {}

        async def run(prompt):
            results[prompt] = await agent.run(prompt)

        nursery.start_soon(run, "first")
        await s.reached.wait()
        nursery.start_soon(run, "queued follow-up")
        await trio.sleep(0.01)
        await agent.cancel()
    assert results["queued follow-up"].stop_reason == "aborted"
    clear = [e for e in rec.of("inbox") if e.reason == "clear"]
    assert clear and clear[0].discarded and [q.message.text for q in clear[0].removed] == ["queued follow-up"]


async def test_cancel_with_keep_inbox_keeps_queued_input_for_later(rt):
    s = Scenario()
    agent = await rt.create(build("build_context", s))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "first")
        await s.reached.wait()
        await agent.followup("kept")
        await agent.cancel(keep_inbox=True)
        await agent.wait_idle()
    assert [q.message.text for q in agent.inbox.next_turn] == ["kept"]


async def test_cancel_validates_its_cause(rt):
    agent = await rt.create(AgentSpec("a", ScriptedModel([])))
    with pytest.raises(ValueError, match="cause must be one of"):
        await agent.cancel(cause="bored")


async def test_a_tool_that_ignores_cancellation_cannot_hold_the_agent(autojump_clock):
    from agentrio import Runtime
    from agentrio.actors.tool_pool import TOOL_ABANDONED
    from agentrio.tools.process import DEFAULT_GRACE

    release = threading.Event()
    entered = threading.Event()
    finished = []

    def stubborn():
        entered.set()
        release.wait(30)
        finished.append(time.monotonic())

    async def execute(args, ctx):
        await trio.to_thread.run_sync(stubborn)  # cannot be cancelled
        return "too late"

    tool = Tool("stubborn", "", {"type": "object"}, execute)
    model = ScriptedModel([calls(("stubborn", {})), say("next")])
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[tool]))
        async with record(agent) as recorder, trio.open_nursery() as nursery:
            results = start_run(nursery, agent, "go")
            await trio.to_thread.run_sync(entered.wait)
            started = trio.current_time()
            await agent.cancel()
            await agent.wait_idle()
            waited = trio.current_time() - started
        assert results[0].stop_reason == "aborted"
        # The run waited as long as a cancelled process may take to die, no
        # longer (jai-mono, raceAbort: an abort is never held up by a tool).
        assert waited == pytest.approx(DEFAULT_GRACE, abs=0.1)
        # History does not claim the call stopped: it was abandoned while running.
        assert agent.messages[-1].text.startswith(TOOL_ABANDONED)
        assert [e.type for e in recorder.events if e.type.startswith("tool_")] == [
            "tool_execution_start",
            "tool_abandoned",
            "tool_execution_end",
        ]
        # The abandoned worker is still supervised by the agent...
        assert len(agent.running_tools) == 1 and not finished
        release.set()
    # ...and Runtime exit waited for it.
    assert finished


async def test_a_cancelled_call_reports_how_long_it_ran_and_one_never_started_none(rt, autojump_clock):
    model = ScriptedModel(
        [calls(("sleep", {"seconds": 60, "tag": "a"}), ("sleep", {"seconds": 60, "tag": "b"}))]
    )
    spec = AgentSpec("a", model, tools=[sleeper(mode="exclusive")])
    agent = await rt.create(spec)
    async with record(agent) as recorder, trio.open_nursery() as nursery:
        results = start_run(nursery, agent, "go")
        while not recorder.of("tool_execution_start"):
            await trio.sleep(0.1)
        await trio.sleep(4)
        await agent.cancel()
        await agent.wait_idle()
    assert results[0].stop_reason == "aborted"
    ran, never = recorder.of("tool_execution_end")
    assert ran.duration == pytest.approx(4, abs=0.2)  # it ran until the cancel, not 0 s
    assert never.duration == 0.0  # an exclusive call after it never started
