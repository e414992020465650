"""OpenTelemetry spans of runs, model requests and tool calls (GenAI
conventions), checked with the SDK's in-memory exporter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trio.testing
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import agentrio
from agentrio import (
    AgentSpec,
    AssistantMessage,
    ProviderError,
    ScriptedModel,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
    agent_tool,
)
from agentrio.models import Anthropic
from agentrio.tools.process import run_process

from .helpers import calls, echo_tool, say, sleeper, start_run
from .models.loopback import Reply, start_server

#: The environment of a subprocess that imports this tree's agentrio.
THIS_TREE = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


@pytest.fixture
def spans():
    """Instrument with an in-memory exporter; ``spans()`` lists the ended
    spans in the order they started."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def finished():
        return sorted(exporter.get_finished_spans(), key=lambda s: s.start_time)

    finished.provider = provider
    agentrio.instrument(provider)
    yield finished
    agentrio.uninstrument()


def named(spans, prefix):
    return [s for s in spans if s.name.startswith(prefix)]


def parent_of(span):
    return span.parent.span_id if span.parent is not None else None


def contains(outer, inner) -> bool:
    return outer.start_time <= inner.start_time and inner.end_time <= outer.end_time


async def test_a_parallel_tool_turn_is_one_trace_with_every_span_under_its_run(rt, spans, autojump_clock):
    model = ScriptedModel(
        [
            calls(
                ("sleep", {"seconds": 2, "tag": "a"}),
                ("sleep", {"seconds": 1, "tag": "b"}),
                usage=Usage(10, 4),
            ),
            say("done", usage=Usage(20, 1)),
        ],
        model="m-1",
    )
    agent = await rt.create(AgentSpec("planner", model, tools=[sleeper()]))
    result = await agent.run("go")
    assert result.stop_reason == "completed"

    found = spans()
    assert [s.name for s in found] == [
        "invoke_agent planner",
        "chat m-1",
        "execute_tool sleep",
        "execute_tool sleep",
        "chat m-1",
    ]
    run, first, *tools, second = found
    # Trio may start the two workers in either order.
    call_ids = [c.id for c in model.requests[1].messages[1].tool_calls]
    tool_a, tool_b = sorted(tools, key=lambda s: call_ids.index(s.attributes["gen_ai.tool.call.id"]))
    assert len({s.context.trace_id for s in found}) == 1
    assert parent_of(run) is None
    assert [parent_of(s) for s in (first, tool_a, tool_b, second)] == [run.context.span_id] * 4
    # Each tool span is its call's execution: after the request that asked
    # for it, before the next one, and the two calls overlap.
    for tool_span in (tool_a, tool_b):
        assert contains(run, tool_span)
        assert first.end_time <= tool_span.start_time and tool_span.end_time <= second.start_time
    assert tool_a.start_time < tool_b.end_time and tool_b.start_time < tool_a.end_time
    assert tool_b.end_time < tool_a.end_time  # b slept less

    assert dict(run.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "planner",
        "gen_ai.agent.id": agent.id,
        "gen_ai.conversation.id": agent.session_id,
        "agentrio.stop_reason": "completed",
        "agentrio.turns": 1,
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 5,
    }
    assert dict(first.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "m-1",
        "gen_ai.conversation.id": agent.session_id,
        "gen_ai.response.model": "m-1",
        "gen_ai.response.finish_reasons": ("tool_use",),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 4,
    }
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert [dict(s.attributes) for s in (tool_a, tool_b)] == [
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "sleep",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": agent.session_id,
        }
        for call_id in call_ids
    ]
    assert all(s.status.status_code == StatusCode.UNSET for s in found)


async def test_each_run_of_an_agent_is_its_own_trace(rt, spans):
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("one"), say("two")])))
    await agent.run("first")
    await agent.run("second")
    runs = named(spans(), "invoke_agent")
    assert len(runs) == 2 and runs[0].context.trace_id != runs[1].context.trace_id


async def test_a_child_agent_runs_under_the_execute_tool_span_that_spawned_it(rt, spans):
    child_model = ScriptedModel(
        [calls(("sleep", {"seconds": 0, "tag": "c"})), say("child done")], model="small"
    )
    helper = agent_tool(
        AgentSpec("helper", child_model, tools=[sleeper()]), name="helper", description="Delegate."
    )
    parent_model = ScriptedModel([calls(("helper", {"task": "look"})), say("done")], model="big")
    agent = await rt.create(AgentSpec("lead", parent_model, tools=[helper]))
    assert (await agent.run("go")).stop_reason == "completed"

    found = spans()
    assert [s.name for s in found] == [
        "invoke_agent lead",
        "chat big",
        "execute_tool helper",
        "invoke_agent helper",
        "chat small",
        "execute_tool sleep",
        "chat small",
        "chat big",
    ]
    lead, _, call, child, child_chat, child_tool, _, _ = found
    assert len({s.context.trace_id for s in found}) == 1
    assert parent_of(call) == lead.context.span_id
    assert parent_of(child) == call.context.span_id
    assert parent_of(child_chat) == parent_of(child_tool) == child.context.span_id
    assert contains(call, child)
    assert child.attributes["gen_ai.conversation.id"] != lead.attributes["gen_ai.conversation.id"]


async def test_a_cancelled_run_ends_its_open_spans_with_an_error_status(rt, spans):
    started = trio.Event()

    async def block(args, ctx):
        started.set()
        await trio.sleep_forever()

    blocker = Tool("block", "Blocks.", {"type": "object"}, block)
    agent = await rt.create(AgentSpec("a", ScriptedModel([calls(("block", {}))]), tools=[blocker]))
    async with trio.open_nursery() as nursery:
        results = []

        async def run():
            results.append(await agent.run("go"))

        nursery.start_soon(run)
        await started.wait()
        await agent.cancel()
    assert results[0].stop_reason == "aborted"

    run_span, chat, tool_span = spans()
    assert tool_span.name == "execute_tool block"
    assert (tool_span.status.status_code, tool_span.status.description) == (StatusCode.ERROR, "cancelled")
    assert tool_span.attributes["error.type"] == "cancelled"
    assert (run_span.status.status_code, run_span.status.description) == (StatusCode.ERROR, "aborted")
    assert run_span.attributes["agentrio.stop_reason"] == "aborted"
    assert run_span.attributes["error.type"] == "aborted"
    assert chat.status.status_code == StatusCode.UNSET
    assert contains(run_span, tool_span)


async def test_a_failing_tool_marks_its_span_and_the_run_goes_on(rt, spans):
    async def fail(args, ctx):
        return ToolResult("disk full", is_error=True)

    failing = Tool("fail", "Fails.", {"type": "object"}, fail)
    agent = await rt.create(
        AgentSpec("a", ScriptedModel([calls(("fail", {})), say("sorry")]), tools=[failing])
    )
    assert (await agent.run("go")).stop_reason == "completed"
    run_span, _, tool_span, _ = spans()
    # The error's text is the tool's output, hence content: not recorded.
    assert (tool_span.status.status_code, tool_span.status.description) == (StatusCode.ERROR, "tool_error")
    assert tool_span.attributes["error.type"] == "tool_error"
    assert run_span.status.status_code == StatusCode.UNSET

    agentrio.instrument(spans.provider, capture_content=True)
    agent = await rt.create(
        AgentSpec("b", ScriptedModel([calls(("fail", {})), say("sorry")]), tools=[failing])
    )
    await agent.run("go")
    tool_span = named(spans(), "execute_tool")[-1]
    assert tool_span.status.description == tool_span.attributes["gen_ai.tool.call.result"] == "disk full"


class _RetryOnce:
    def delay(self, error, attempt):
        return 2.0 if attempt == 1 else None


async def test_a_retried_request_is_a_failed_chat_span_then_a_retry_event_on_the_run(
    rt, spans, autojump_clock
):
    model = ScriptedModel(
        [ProviderError(type="connection_error", message="connection reset"), say("the answer")]
    )
    model.retry_policy = _RetryOnce()
    agent = await rt.create(AgentSpec("a", model))
    assert (await agent.run("go")).stop_reason == "completed"

    run_span, failed, answered = spans()
    assert failed.name == answered.name == "chat scripted"
    assert (failed.status.status_code, failed.attributes["error.type"]) == (
        StatusCode.ERROR,
        "connection_error",
    )
    assert "connection reset" in failed.status.description
    assert answered.status.status_code == StatusCode.UNSET
    [retry] = run_span.events
    assert (retry.name, dict(retry.attributes)) == (
        "agentrio.retry",
        {"attempt": 1, "delay": 2.0, "error.type": "connection_error"},
    )
    assert failed.end_time <= retry.timestamp <= answered.start_time
    assert run_span.status.status_code == StatusCode.UNSET


async def test_a_discarded_stream_is_an_event_on_the_run(rt, spans):
    written = say('Let me call it: <invoke name="echo"><parameter name="text">x</parameter></invoke>')
    agent = await rt.create(AgentSpec("a", ScriptedModel([written, say("done")]), tools=[echo_tool()]))
    await agent.run("go")
    run_span, discarded, answered = spans()
    [discard] = run_span.events
    assert (discard.name, dict(discard.attributes)) == ("agentrio.discard", {"reason": "protocol_repair"})
    assert discarded.end_time <= discard.timestamp <= answered.start_time


async def test_a_failed_run_has_an_error_status_with_its_stop_reason(rt, spans):
    model = ScriptedModel([ProviderError(401, "authentication_error", "bad key")])
    agent = await rt.create(AgentSpec("a", model))
    result = await agent.run("go")
    run_span, chat = spans()
    assert run_span.status.status_code == StatusCode.ERROR
    assert run_span.status.description == f"{result.stop_reason}: {result.error}"
    assert run_span.attributes["error.type"] == result.stop_reason == "model_error"
    assert chat.attributes["error.type"] == "authentication_error"


async def test_an_approval_is_an_event_on_the_run(rt, spans):
    model = ScriptedModel([calls(("echo", {"text": "x"})), say("done")])
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()], permission=lambda call, tool: "ask"))
    async with agent.subscribe() as events, trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "go")
        async for event in events:
            if event.type == "approval_request":
                await agent.answer(event.request_id, "approve")
            if event.type == "agent_end":
                break
    run_span = named(spans(), "invoke_agent")[0]
    call_id = named(spans(), "execute_tool")[0].attributes["gen_ai.tool.call.id"]
    assert [(e.name, dict(e.attributes)) for e in run_span.events] == [
        ("agentrio.approval", {"gen_ai.tool.call.id": call_id, "decision": "approve"})
    ]


# -- content ------------------------------------------------------------------

CONTENT_KEYS = {
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


async def test_no_content_is_recorded_unless_enabled(rt, spans):
    model = ScriptedModel([calls(("echo", {"text": "secret"})), say("the secret is out")])
    agent = await rt.create(AgentSpec("a", model, system_prompt="Keep secrets.", tools=[echo_tool()]))
    await agent.run("tell me the secret")
    found = spans()
    assert len(found) == 4
    for span in found:
        assert not CONTENT_KEYS & set(span.attributes)
        assert "secret" not in json.dumps(dict(span.attributes), default=str)


async def test_content_is_recorded_in_the_conventions_shape_when_enabled(rt, spans):
    agentrio.instrument(spans.provider, capture_content=True)
    call = ToolCall("c1", "echo", {"text": "hi"})
    model = ScriptedModel([AssistantMessage([call]), say("said hi")])
    agent = await rt.create(AgentSpec("a", model, system_prompt="Be brief.", tools=[echo_tool()]))
    await agent.run("greet")
    _, first, tool_span, second = spans()
    assert json.loads(first.attributes["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "Be brief."}
    ]
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "greet"}]}
    ]
    assert json.loads(first.attributes["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "echo", "arguments": {"text": "hi"}}],
            "finish_reason": "tool_use",
        }
    ]
    assert json.loads(second.attributes["gen_ai.input.messages"])[-1] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "c1", "response": "echo: hi"}],
    }
    assert json.loads(tool_span.attributes["gen_ai.tool.call.arguments"]) == {"text": "hi"}
    assert tool_span.attributes["gen_ai.tool.call.result"] == "echo: hi"


# -- switching it off -----------------------------------------------------------


async def test_uninstrument_stops_new_spans(rt, spans):
    agent = await rt.create(AgentSpec("a", ScriptedModel([say("one"), say("two")])))
    await agent.run("first")
    agentrio.uninstrument()
    await agent.run("second")
    assert [s.name for s in spans()] == ["invoke_agent a", "chat scripted"]


async def test_spans_open_when_tracing_stops_still_end_and_no_new_one_starts(rt, spans):
    release = trio.Event()

    async def wait(args, ctx):
        await release.wait()
        return "released"

    waiter = Tool("wait", "Waits.", {"type": "object"}, wait)
    agent = await rt.create(AgentSpec("a", ScriptedModel([calls(("wait", {})), say("done")]), tools=[waiter]))
    async with trio.open_nursery() as nursery:
        results = start_run(nursery, agent, "go")
        await trio.testing.wait_all_tasks_blocked()
        agentrio.uninstrument()
        release.set()
    assert results[0].stop_reason == "completed"
    assert [s.name for s in spans()] == ["invoke_agent a", "chat scripted", "execute_tool wait"]
    assert all(s.end_time is not None for s in spans())


def test_nothing_from_opentelemetry_is_imported_until_instrument():
    script = """
import sys, trio
import agentrio
from agentrio import AgentSpec, Runtime, ScriptedModel, Tool, ToolCall, AssistantMessage, Text
from agentrio.tools.process import run_process

async def echo(args, ctx):
    return (await run_process(["true"])).status

async def main():
    async with Runtime() as rt:
        model = ScriptedModel([AssistantMessage([ToolCall("c", "echo", {})]), AssistantMessage([Text("ok")])])
        agent = await rt.create(AgentSpec("a", model, tools=[Tool("echo", "e", {"type": "object"}, echo)]))
        assert (await agent.run("go")).stop_reason == "completed"

trio.run(main)
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
agentrio.instrument()
print(any(m.startswith("opentelemetry") for m in sys.modules))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=THIS_TREE
    ).stdout
    assert out.splitlines() == ["[]", "True"]


def test_instrument_without_the_api_says_which_extra_to_install():
    script = """
import sys
sys.modules["opentelemetry"] = None  # as if not installed
import agentrio
try:
    agentrio.instrument()
except ImportError as exc:
    print(exc)
print(agentrio.tracing.instrumented())
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=THIS_TREE
    ).stdout
    assert out.splitlines() == ["tracing needs the OpenTelemetry API: pip install 'agentrio[otel]'", "False"]


# -- trace context across boundaries ------------------------------------------


def _sse(*events: tuple[str, dict]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


ANTHROPIC_HELLO = _sse(
    (
        "message_start",
        {"type": "message_start", "message": {"model": "claude-x", "usage": {"input_tokens": 3}}},
    ),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}},
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    ),
    ("message_stop", {"type": "message_stop"}),
)


@pytest.mark.parametrize("enabled", [True, False])
async def test_provider_requests_carry_the_chat_span_as_traceparent_only_when_enabled(
    rt, spans, nursery, enabled
):
    agentrio.instrument(spans.provider, provider_traceparent=enabled)
    server = await start_server(nursery)
    server.reply(Reply(chunks=[ANTHROPIC_HELLO]))
    agent = await rt.create(AgentSpec("a", Anthropic("claude-x", base_url=server.url, api_key="k")))
    assert (await agent.run("hi")).text == "Hello"
    _, chat = spans()
    assert dict(chat.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-x",
        "gen_ai.request.max_tokens": 16384,  # the adapter's default
        "gen_ai.conversation.id": agent.session_id,
        "gen_ai.response.model": "claude-x",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 3,
        "gen_ai.usage.output_tokens": 2,
    }
    headers = server.requests[0].headers
    if enabled:
        ctx = chat.context
        assert headers["traceparent"] == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}"
    else:
        assert "traceparent" not in headers


async def test_a_supervised_subprocess_gets_the_tool_span_as_TRACEPARENT(rt, spans):
    async def env(args, ctx):
        result = await run_process(["/bin/sh", "-c", 'echo "$TRACEPARENT|$HOME"'], env={"HOME": "/nowhere"})
        return result.stdout.strip()

    shell = Tool("env", "Print the trace context.", {"type": "object"}, env)
    agent = await rt.create(AgentSpec("a", ScriptedModel([calls(("env", {})), say("ok")]), tools=[shell]))
    await agent.run("go")
    tool_span = named(spans(), "execute_tool")[0]
    printed = agent.messages[2].text
    ctx = tool_span.context
    assert printed == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}|/nowhere"


async def test_a_subprocess_outside_any_span_gets_no_TRACEPARENT(spans):
    result = await run_process(["/bin/sh", "-c", 'echo "[$TRACEPARENT]"'])
    assert result.stdout.strip() == "[]"


async def test_an_mcp_tool_call_carries_the_tool_span_in_its_meta(rt, spans):
    from agentrio.tools.mcp import mcp_server

    async with mcp_server(
        sys.executable, [str(Path(__file__).with_name("mcp_trace_server.py"))], name="trace"
    ) as server:
        tools = server.tools_by_name()
        model = ScriptedModel([calls(("traceparent", {})), say("ok")])
        agent = await rt.create(AgentSpec("a", model, tools=[tools["traceparent"]]))
        await agent.run("go")
        agentrio.uninstrument()
        untraced = await tools["traceparent"].execute({}, None)
    ctx = named(spans(), "execute_tool")[0].context
    assert agent.messages[2].text == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}"
    assert untraced.content == [Text("")]


async def test_a_run_cancelled_mid_stream_ends_its_chat_span_cancelled(rt, spans):
    streaming = trio.Event()

    class Hanging(ScriptedModel):
        async def stream(self, request):
            async for event in super().stream(request):
                yield event
                if event.type == "text_delta":
                    streaming.set()
                    await trio.sleep_forever()

    agent = await rt.create(AgentSpec("a", Hanging([say("a long answer")])))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.run, "go")
        await streaming.wait()
        await agent.cancel()
    run_span, chat = spans()
    assert (chat.status.status_code, chat.status.description) == (StatusCode.ERROR, "cancelled")
    assert chat.attributes["error.type"] == "cancelled"
    assert "gen_ai.response.finish_reasons" not in chat.attributes
    assert run_span.status.description == "aborted"
    assert [e.name for e in run_span.events] == []


def test_the_tracing_benchmark_runs_every_mode_at_its_quick_size():
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "bench/tracing_overhead.py", "--quick"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env=THIS_TREE,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split()[0] for line in done.stdout.splitlines() if " of off" in line]
    assert rows == ["off", "on", "content"]


async def test_with_turn_spans_the_trace_follows_the_state_machine(rt, spans):
    """QueryEngine seed ("trace 不知道记录哪一步" — without a state machine the
    trace cannot say which step it is in): with ``turn_spans`` the trace is
    invoke_agent -> turn -> step -> chat / execute_tool."""
    agentrio.instrument(spans.provider, turn_spans=True)
    model = ScriptedModel([calls(("echo", {"text": "a"})), say("done")], model="m")
    agent = await rt.create(AgentSpec("a", model, tools=[echo_tool()]))
    assert (await agent.run("go")).stop_reason == "completed"
    found = spans()
    assert [s.name for s in found] == [
        "invoke_agent a",
        "turn 1",
        "step 1",
        "chat m",
        "execute_tool echo",
        "step 2",
        "chat m",
    ]
    run, turn, step1, chat1, tool, step2, chat2 = found
    assert parent_of(turn) == run.context.span_id
    assert parent_of(step1) == parent_of(step2) == turn.context.span_id
    assert parent_of(chat1) == parent_of(tool) == step1.context.span_id
    assert parent_of(chat2) == step2.context.span_id
    assert turn.attributes["agentrio.stop_reason"] == "completed" and step2.attributes["agentrio.step"] == 2


async def test_a_fallback_is_a_failed_chat_span_then_a_fallback_event_on_the_run(rt, spans):
    from agentrio import FallbackModel

    first = ScriptedModel(
        [ProviderError(status=529, type="overloaded_error", message="overloaded")], model="big"
    )
    second = ScriptedModel([say("the answer")], model="small")
    agent = await rt.create(AgentSpec("a", FallbackModel(first, second)))
    assert (await agent.run("go")).stop_reason == "completed"

    run_span, failed, answered = spans()
    assert (failed.name, answered.name) == ("chat big", "chat small")
    assert failed.status.status_code == StatusCode.ERROR
    [fallback] = run_span.events
    assert (fallback.name, dict(fallback.attributes)) == (
        "agentrio.fallback",
        {"from": "scripted:big", "to": "scripted:small", "error.type": "overloaded_error"},
    )
