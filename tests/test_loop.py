"""The agent loop: event order, errors as data, limits, truncation, repair."""

import gc

import pytest
import trio

from agentrio import (
    AgentSpec,
    AssistantMessage,
    Hooks,
    Limits,
    ProviderError,
    ScriptedModel,
    Text,
    ToolCall,
    ToolRefused,
    ToolResultMessage,
    Usage,
    UserMessage,
    tool,
)
from agentrio.actors.activity import MAX_TURNS_NOTE
from agentrio.journal.projection import SessionState
from agentrio.messages import TOOL_NOT_STARTED
from agentrio.models import request_problems

from .conftest import record
from .helpers import calls, echo_tool, say


async def test_event_order_of_a_tool_turn(rt):
    model = ScriptedModel([calls(("echo", {"text": "a"}), ("echo", {"text": "b"})), say("done")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    async with record(agent) as rec:
        result = await agent.run("go")
    assert result.stop_reason == "completed"
    assert rec.types() == [
        "agent_start",
        "turn_start",
        "step_start",
        "message_start",
        "message_end",  # the prompt
        "message_start",
        "message_end",  # the assistant asks for two calls
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
        "message_end",  # the final answer
        "step_end",
        "turn_end",
        "agent_end",
    ]
    assert rec.states() == [
        "build_context",
        "call_model",
        "validate_tools",
        "check_permission",
        "execute_tools",
        "append_results",
        "build_context",
        "call_model",
        "done",
    ]
    assert [e.status for e in rec.of("status")] == ["running", "idle"]
    seqs = [e.seq for e in rec.events]
    assert seqs == sorted(set(seqs)) and seqs[0] >= 1
    end = rec.of("agent_end")[0]
    assert end.stop_reason == "completed" and end.new_messages == result.new_messages


async def test_message_updates_carry_the_stream(rt):
    model = ScriptedModel([say("hello there, world")], chunk_size=4)
    agent = await rt.create(AgentSpec("a", model))
    async with record(agent) as rec:
        await agent.run("hi")
    deltas = [e.delta.text for e in rec.of("message_update") if e.delta.type == "text_delta"]
    assert deltas == ["hell", "o th", "ere,", " wor", "ld"]


async def test_results_reach_the_next_request_and_history(rt):
    model = ScriptedModel([calls(("echo", {"text": "ping"})), say("pong")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], system_prompt="be brief"))
    result = await agent.run("go")
    second = model.requests[1]
    assert second.system_prompt == "be brief"
    assert [m.role for m in second.messages] == ["user", "assistant", "tool_result"]
    assert second.messages[-1].text == "echo: ping"
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool_result", "assistant"]
    assert result.new_messages == list(agent.messages)
    assert result.text == "pong"


async def test_history_is_a_projection_of_the_journal(rt):
    model = ScriptedModel([calls(("echo", {"text": "x"})), say("y")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    await agent.run("go")
    _, records = await rt.store.load_session(agent.session_id)
    rebuilt = SessionState()
    for r in records:
        rebuilt.apply(r)
    assert rebuilt.messages == list(agent.messages)
    assert [r.type for r in records[:4]] == ["inbox_spliced", "turn_started", "inbox_spliced", "step_started"]


async def test_second_run_new_messages_hold_only_that_run(rt):
    model = ScriptedModel([say("one"), say("two")])
    agent = await rt.create(AgentSpec("a", model))
    await agent.run("first")
    result = await agent.run("second")
    assert [m.text for m in result.new_messages] == ["second", "two"]
    assert len(agent.messages) == 4


async def test_usage_is_summed_over_the_run(rt):
    model = ScriptedModel(
        [calls(("echo", {"text": "x"}), usage=Usage(10, 5, 2, 1)), say("y", usage=Usage(20, 7))]
    )
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    result = await agent.run("go")
    assert result.usage == Usage(30, 12, 2, 1)
    assert agent.usage == result.usage


# -- context isolation ---------------------------------------------------------


async def test_prepare_context_gets_a_copy_that_never_touches_history(rt):
    seen = []

    def trim(ctx):
        seen.append([m.role for m in ctx.messages])
        ctx.messages.clear()  # a destructive trim of the copy
        ctx.messages.append(UserMessage("summary of everything"))
        ctx.tools.clear()
        return ctx

    model = ScriptedModel([calls(("echo", {"text": "x"})), say("done")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], hooks=Hooks(prepare_context=trim)))
    await agent.run("go")
    assert seen == [["user"], ["user", "assistant", "tool_result"]]
    assert [m.text for m in model.requests[1].messages] == ["summary of everything"]
    assert model.requests[1].tools == []
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool_result", "assistant"]


async def test_committed_history_excludes_the_open_step(rt):
    during = []

    @tool
    async def peek() -> str:
        """Look at the agent's committed history."""
        during.append([m.role for m in agent.messages])
        return "seen"

    model = ScriptedModel([calls(("peek", {})), say("done")])
    agent = await rt.create(AgentSpec("a", model, tools=[peek]))
    await agent.run("go")
    assert during == [[]]  # the step holding the prompt and the call is still open
    assert len(agent.messages) == 4


# -- errors are data -------------------------------------------------------------


@tool
async def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


async def _refuse(ctx, call_next):
    if ctx.tool.name == "echo" and ctx.args["text"] == "forbidden":
        raise ToolRefused("echoing that is not allowed")
    return await call_next()


@pytest.mark.parametrize(
    "call, expected, code",
    [
        (ToolCall("c", "nope", {}), "unknown tool 'nope'; available tools: echo, explode", "TOOL_NOT_FOUND"),
        (
            ToolCall("c", "echo", {"txt": "x"}),
            "invalid arguments for echo: 'text' is a required property",
            "TOOL_INPUT_INVALID",
        ),
        (
            ToolCall("c", "echo", {"text": 3}),
            "invalid arguments for echo: text: 3 is not of type 'string'",
            "TOOL_INPUT_INVALID",
        ),
        (ToolCall("c", "echo", {}, raw_arguments='{"text": '), "not a JSON object", "TOOL_INPUT_INVALID"),
        (ToolCall("c", "explode", {"reason": "x"}), "RuntimeError: boom: x", "TOOL_FAILED"),
        (
            ToolCall("c", "echo", {"text": "forbidden"}),
            "refused: echoing that is not allowed",
            "PERMISSION_DENIED",
        ),
    ],
)
async def test_tool_failures_become_error_results_with_a_code_and_the_run_goes_on(rt, call, expected, code):
    model = ScriptedModel([AssistantMessage([call]), say("recovered")])
    spec = AgentSpec("a", model, tools=[echo_tool(), explode], middleware=[_refuse])
    agent = await rt.create(spec)
    async with record(agent) as rec:
        result = await agent.run("go")
    assert result.stop_reason == "completed"
    error = model.requests[1].messages[-1]
    assert isinstance(error, ToolResultMessage) and error.is_error
    assert expected in error.text
    assert error.error_code == code
    end = rec.of("tool_execution_end")[0]
    assert end.is_error and end.tool_call_id == "c" and end.result.error_code == code
    assert "recover" in rec.states()
    # The code is journaled with the result.
    _, records = await rt.store.load_session(agent.session_id)
    assert [
        r.message.error_code
        for r in records
        if getattr(r, "type", "") == "message_appended" and r.message.role == "tool_result"
    ] == [code]


async def test_a_successful_result_has_no_error_code(rt):
    model = ScriptedModel([calls(("echo", {"text": "x"})), say("ok")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    await agent.run("go")
    assert agent.messages[2].error_code is None


# -- limits --------------------------------------------------------------------


async def test_max_turns_counts_model_requests(rt):
    model = ScriptedModel([calls(("echo", {"text": str(i)})) for i in range(5)])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], limits=Limits(max_turns=3)))
    result = await agent.run("loop forever")
    assert result.stop_reason == "max_turns"
    assert len(model.requests) == 3
    assert request_problems(_next_request(agent)) == []


async def test_hitting_max_turns_leaves_a_note_the_model_sees_next(rt):
    model = ScriptedModel([calls(("echo", {"text": "x"})), say("resumed")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], limits=Limits(max_turns=1)))
    assert (await agent.run("loop")).stop_reason == "max_turns"
    note = agent.messages[-1]
    assert note == UserMessage(MAX_TURNS_NOTE.format(1))
    await agent.run("go on")
    assert model.requests[1].messages[-2:] == [note, UserMessage("go on")]


async def test_max_tool_calls_stops_after_the_batch_with_every_call_answered(rt):
    model = ScriptedModel([calls(*[("echo", {"text": str(i)}) for i in range(3)]), say("unreached")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], limits=Limits(max_tool_calls=2)))
    async with record(agent) as rec:
        result = await agent.run("go")
    assert result.stop_reason == "max_tool_calls"
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [False, False, True]
    assert results[2].text.startswith(TOOL_NOT_STARTED) and "limit of 2 tool calls" in results[2].text
    assert len(rec.of("tool_execution_start")) == 3  # every call has a start and an end
    assert request_problems(_next_request(agent)) == []


async def test_timeout_stops_the_run(rt, autojump_clock):
    sleepy = ScriptedModel([calls(("slow", {}))])

    @tool
    async def slow() -> str:
        """Takes an hour."""
        await trio.sleep(3600)
        return "done"

    agent = await rt.create(AgentSpec("a", sleepy, tools=[slow], limits=Limits(timeout=10)))
    start = trio.current_time()
    result = await agent.run("go")
    assert result.stop_reason == "timeout"
    assert trio.current_time() - start == pytest.approx(10, abs=0.01)
    assert agent.messages[-1].is_error
    assert request_problems(_next_request(agent)) == []


def _next_request(agent):
    from agentrio.messages import project_tool_protocol
    from agentrio.models import ModelRequest

    return ModelRequest("", project_tool_protocol([*agent.messages, UserMessage("next")]))


# -- truncation ----------------------------------------------------------------


@pytest.mark.parametrize(
    "stop_reason, run_stop",
    [
        ("max_tokens", "max_tokens"),
        ("context_overflow", "context_overflow"),
        ("error", "model_error"),
        ("aborted", "aborted"),
    ],
)
async def test_truncated_output_is_never_executed(rt, stop_reason, run_stop):
    executed = []

    @tool
    async def act(x: str) -> str:
        """Act."""
        executed.append(x)
        return "acted"

    cut = AssistantMessage([Text("partial"), ToolCall("c", "act", {"x": "1"})], stop_reason=stop_reason)
    model = ScriptedModel([cut])
    agent = await rt.create(AgentSpec("a", model, tools=[act]))
    result = await agent.run("go")
    assert executed == []
    assert result.stop_reason == run_stop
    answer = agent.messages[-1]
    assert answer.is_error and answer.text.startswith(TOOL_NOT_STARTED) and stop_reason in answer.text
    assert answer.error_code == TOOL_NOT_STARTED
    assert request_problems(_next_request(agent)) == []


# -- model errors and retries ----------------------------------------------------


async def test_a_provider_error_ends_the_run_as_data(rt):
    model = ScriptedModel([ProviderError(401, "authentication_error", "bad key")])
    agent = await rt.create(AgentSpec("a", model))
    result = await agent.run("go")
    assert result.stop_reason == "model_error"
    assert result.error == "HTTP 401 authentication_error: bad key"
    # Nothing empty is committed for a request that failed before saying anything.
    assert [m.role for m in result.new_messages] == ["user"]
    assert [m.role for m in agent.messages] == ["user"]


async def test_context_overflow_from_the_provider(rt):
    model = ScriptedModel([ProviderError(400, "context_overflow", "prompt is too long")])
    agent = await rt.create(AgentSpec("a", model))
    assert (await agent.run("go")).stop_reason == "context_overflow"


class _FixedRetry:
    def __init__(self, attempts):
        self.attempts = attempts

    def delay(self, error, attempt):
        return 2.0 if attempt < self.attempts else None


async def test_a_retried_attempt_is_discarded_and_never_enters_history(rt, autojump_clock):
    partial_then_drop = AssistantMessage([Text("I will now")])

    class Flaky(ScriptedModel):
        async def stream(self, request):
            async for event in super().stream(request):
                yield event
                if len(self.requests) == 1 and event.type == "text_delta":
                    raise ProviderError(type="connection_error", message="dropped mid-stream")

    model = Flaky([partial_then_drop, say("the real answer")])
    model.retry_policy = _FixedRetry(attempts=3)
    agent = await rt.create(AgentSpec("a", model))
    async with record(agent) as rec:
        start = trio.current_time()
        result = await agent.run("go")
    assert result.stop_reason == "completed"
    assert trio.current_time() - start == pytest.approx(2.0)
    types = rec.types(skip=("state", "inbox", "status"))
    i = types.index("message_discard")
    assert types[i - 3 : i + 3] == [
        "message_start",
        "message_update",
        "message_update",
        "message_discard",
        "request_retry",
        "message_start",
    ]
    assert [m.text for m in agent.messages] == ["go", "the real answer"]
    retry = rec.of("request_retry")[0]
    assert (retry.attempt, retry.delay, retry.error.type) == (1, 2.0, "connection_error")


async def test_each_retry_rebuilds_the_request(rt, autojump_clock):
    built = []

    def stamp(ctx):
        built.append(trio.current_time())
        ctx.system_prompt = f"now: {trio.current_time():.0f}"

    model = ScriptedModel([ProviderError(529, "overloaded_error", "busy"), say("ok")])
    model.retry_policy = _FixedRetry(attempts=2)
    agent = await rt.create(AgentSpec("a", model, hooks=Hooks(prepare_context=stamp)))
    start = trio.current_time()
    assert (await agent.run("go")).text == "ok"
    assert [t - start for t in built] == [0, 2.0]
    assert [r.system_prompt for r in model.requests] == [f"now: {start:.0f}", f"now: {start + 2:.0f}"]


async def test_retries_stop_when_the_policy_gives_up(rt, autojump_clock):
    error = ProviderError(529, "overloaded_error", "busy")
    model = ScriptedModel([error, error, error, say("unreached")])
    model.retry_policy = _FixedRetry(attempts=3)
    agent = await rt.create(AgentSpec("a", model))
    async with record(agent) as rec:
        result = await agent.run("go")
    assert result.stop_reason == "model_error"
    assert len(model.requests) == 3 and len(rec.of("request_retry")) == 2


async def test_the_request_error_hook_overrides_the_policy(rt, autojump_clock):
    seen = []

    def decide(err):
        seen.append((err.error.status, err.attempt, err.default_delay))
        return 0.5 if err.attempt == 1 else None

    model = ScriptedModel([ProviderError(400, "invalid_request_error", "x"), say("ok")])
    model.retry_policy = _FixedRetry(attempts=0)
    agent = await rt.create(AgentSpec("a", model, hooks=Hooks(on_request_error=decide)))
    result = await agent.run("go")
    assert result.stop_reason == "completed"
    assert seen == [(400, 1, None)]


# -- protocol repair -------------------------------------------------------------


@pytest.mark.parametrize(
    "fake",
    [
        '<invoke name="echo"><parameter name="text">x</parameter></invoke>',
        "<function_calls>[...]</function_calls>",
        '<tool_call>{"name": "echo"}</tool_call>',
    ],
)
async def test_tool_calls_written_as_text_are_discarded_and_retried_once(rt, fake):
    model = ScriptedModel([say(f"Let me call it: {fake}"), calls(("echo", {"text": "x"})), say("done")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    async with record(agent) as rec:
        result = await agent.run("go")
    assert result.stop_reason == "completed"
    assert [e.reason for e in rec.of("message_discard")] == ["protocol_repair"]
    repair = model.requests[1].messages[-1]
    assert isinstance(repair, UserMessage) and "native tool-calling" in repair.text
    assert model.requests[1].messages[:-1] == model.requests[0].messages
    history_text = " ".join(m.text for m in agent.messages)
    assert "native tool-calling" not in history_text and fake not in history_text
    assert len(model.requests) == 3  # the repair did not count as a turn of its own
    types = rec.types(skip=("state", "inbox", "status", "message_update"))
    assert types[types.index("message_discard") - 1 : types.index("message_discard") + 2] == [
        "message_start",
        "message_discard",
        "message_start",
    ]


async def test_protocol_repair_is_tried_only_once(rt):
    fake = "<tool_call>{}</tool_call>"
    model = ScriptedModel([say(fake), say(fake)])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    async with record(agent) as rec:
        result = await agent.run("go")
    assert result.stop_reason == "completed"
    assert len(rec.of("message_discard")) == 1
    assert agent.messages[-1].text == fake


async def test_the_protocol_repair_text_is_the_hooks_to_choose(rt):
    fake = "<tool_call>{}</tool_call>"
    seen = []

    def repair(message):
        seen.append(message.text)
        return "Use the tools API, please."

    model = ScriptedModel([say(fake), say("fixed")])
    agent = await rt.create(
        AgentSpec("a", model, tools=[echo_tool()], hooks=Hooks(on_protocol_violation=repair))
    )
    assert (await agent.run("go")).text == "fixed"
    assert seen == [fake]
    assert model.requests[1].messages[-1] == UserMessage("Use the tools API, please.")


async def test_markup_is_not_a_violation_without_tools(rt):
    model = ScriptedModel([say("XML example: <tool_call>x</tool_call>")])
    agent = await rt.create(AgentSpec("a", model))
    async with record(agent) as rec:
        await agent.run("explain")
    assert rec.of("message_discard") == []


async def test_a_fatal_tool_error_ends_the_run_after_its_batch(rt, autojump_clock):
    from agentrio import Limits, ToolFatal

    from .helpers import sleeper

    @tool
    async def deploy() -> str:
        """Deploy."""
        raise ToolFatal("credentials revoked")

    log = []
    model = ScriptedModel(
        [
            calls(
                ("sleep", {"seconds": 1, "tag": "running"}),
                ("deploy", {}),
                ("sleep", {"seconds": 1, "tag": "later"}),
            )
        ]
    )
    spec = AgentSpec("a", model, tools=[deploy, sleeper(log=log)], limits=Limits(max_parallel_tool_calls=2))
    agent = await rt.create(spec)
    result = await agent.run("go")
    assert result.stop_reason == "tool_error"
    running, fatal, later = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert running.text == "slept running"  # already running: it finished and was committed
    assert fatal.is_error and fatal.text == "fatal: credentials revoked"
    assert later.text.startswith(TOOL_NOT_STARTED) and "tool_error" in later.text
    assert [tag for kind, tag, _ in log if kind == "start"] == ["running"]
    assert len(model.requests) == 1


def test_a_spec_may_name_its_model(monkeypatch):
    import pytest

    from agentrio.models import Anthropic

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert isinstance(AgentSpec("a", "anthropic:claude-sonnet-4-5").model, Anthropic)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY is not set"):
        AgentSpec("a", "anthropic:claude-sonnet-4-5")


async def test_a_stream_may_end_with_an_error_event(rt):
    from agentrio.models import StreamError, StreamStart, TextDelta, TextStart

    class Failing(ScriptedModel):
        async def stream(self, request):
            self.requests.append(request)
            yield StreamStart()
            yield TextStart(0)
            yield TextDelta(0, "partial")
            yield StreamError(ProviderError(500, "server_error", "upstream died"))

    agent = await rt.create(AgentSpec("a", Failing([])))
    result = await agent.run("go")
    assert result.stop_reason == "model_error" and result.error == "HTTP 500 server_error: upstream died"
    assert agent.messages[-1].text == "partial" and agent.messages[-1].stop_reason == "error"


async def test_an_adapter_that_raises_fails_the_request_and_a_failing_observer_fails_the_run(rt):
    from agentrio.models import StreamStart

    class Raising(ScriptedModel):
        async def stream(self, request):
            self.requests.append(request)
            yield StreamStart()
            raise KeyError("lost")

    agent = await rt.create(AgentSpec("a", Raising([])))
    result = await agent.run("go")
    assert result.stop_reason == "model_error" and result.error == "adapter_error: KeyError: 'lost'"

    def observe(event):
        raise KeyError("observer")

    agent = await rt.create(
        AgentSpec("b", ScriptedModel([say("hi")]), hooks=Hooks(on_assistant_stream=observe))
    )
    result = await agent.run("go")
    assert result.stop_reason == "error" and "observer" in result.error


async def test_a_cancel_closes_the_stream_in_the_task_that_opened_it(rt):
    from agentrio.models import StreamStart

    tasks = []

    class Hanging(ScriptedModel):
        async def stream(self, request):
            tasks.append(trio.lowlevel.current_task())
            try:
                yield StreamStart()
                await trio.sleep_forever()
            finally:
                tasks.append(trio.lowlevel.current_task())

    agent = await rt.create(AgentSpec("a", Hanging([])))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "go")
        await trio.testing.wait_all_tasks_blocked()
        await agent.cancel()
    await agent.wait_idle()
    assert len(tasks) == 2 and tasks[0] is tasks[1]


async def test_the_stream_actor_has_ended_before_its_request_returns_even_when_the_reader_leaves_early(rt):
    """The reader fails on the first event while the actor waits for room in
    a full mailbox: the actor is cancelled, and its task has ended (the
    adapter's ``finally`` ran) before the run's result comes back."""
    from agentrio.actors.model_stream import STREAM_MAILBOX_CAPACITY
    from agentrio.models import StreamStart, TextDelta

    seen = []

    class Flooding(ScriptedModel):
        async def stream(self, request):
            seen.append(("stream", trio.lowlevel.current_task()))
            try:
                yield StreamStart()
                for _ in range(STREAM_MAILBOX_CAPACITY * 2):
                    yield TextDelta(0, "x")
            finally:
                seen.append(("closed", trio.lowlevel.current_task()))

    def observe(event):
        seen.append(("observed", trio.lowlevel.current_task()))
        raise KeyError("observer")

    agent = await rt.create(AgentSpec("a", Flooding([]), hooks=Hooks(on_assistant_stream=observe)))
    result = await agent.run("go")
    assert result.stop_reason == "error" and "observer" in result.error
    assert [what for what, _ in seen] == ["stream", "observed", "closed"]
    (_, actor), (_, reader), (_, closer) = seen
    assert actor is closer and actor is not reader


async def test_a_tool_turn_leaves_no_cycle_for_the_garbage_collector(rt):
    # Everything a run builds is freed by reference counting the moment the
    # run ends: a cycle would wait for a collection, which costs every turn.
    turn = [lambda _: calls(("echo", {"text": "a"}), ("echo", {"text": "b"})), say("done")]
    agent = await rt.create(AgentSpec("a", ScriptedModel(turn * 3), tools=[echo_tool()]))
    async with record(agent):
        await agent.run("warm up")
        gc.collect()
        enabled = gc.isenabled()
        gc.disable()
        try:
            gc.set_debug(gc.DEBUG_SAVEALL)
            await agent.run("go")
            await agent.run("go")
            gc.collect()
            ours = [type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("agentrio")]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            if enabled:
                gc.enable()
    assert ours == []
