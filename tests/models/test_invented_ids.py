"""Tool-call ids a server omits are invented unique across a session."""

from __future__ import annotations

import pytest

from agentrio import AgentSpec, Runtime, ScriptedModel, Text, Tool, ToolResultMessage, UserMessage
from agentrio.messages import TOOL_RESULT_MISSING, project_tool_protocol
from agentrio.models import ModelRequest, request_problems
from agentrio.models.anthropic_stream import AnthropicStreamMapper
from agentrio.models.openai_chat_stream import ChatStreamMapper
from agentrio.models.openai_responses_stream import ResponsesStreamMapper

from ..helpers import say
from .test_stream_mappers import assemble, chunk


def chat_without_ids():
    return assemble(
        ChatStreamMapper("m", "local"),
        chunk({"tool_calls": [{"index": 0, "function": {"name": "read", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"name": "ls", "arguments": "{}"}}]}, "tool_calls"),
        "[DONE]",
    )


def responses_without_ids():
    calls = [
        {
            "type": "response.output_item.done",
            "output_index": i,
            "item": {"type": "function_call", "name": name, "arguments": "{}"},
        }
        for i, name in enumerate(["read", "ls"])
    ]
    completed = {"type": "response.completed", "response": {"status": "completed"}}
    return assemble(ResponsesStreamMapper("m", "local"), *calls, completed)


def anthropic_with_empty_ids():
    events = [{"type": "message_start", "message": {"model": "m"}}]
    for i, name in enumerate(["read", "ls"]):
        events += [
            {
                "type": "content_block_start",
                "index": i,
                "content_block": {"type": "tool_use", "id": "", "name": name, "input": {}},
            },
            {"type": "content_block_stop", "index": i},
        ]
    events += [{"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, {"type": "message_stop"}]
    return assemble(AnthropicStreamMapper("m", "local"), *events)


@pytest.mark.parametrize("stream", [chat_without_ids, responses_without_ids, anthropic_with_empty_ids])
def test_invented_call_ids_are_unique_across_the_steps_of_a_session(stream):
    steps = [stream(), stream()]
    ids = [call.id for step in steps for call in step.tool_calls]
    assert len(ids) == 4 and len(set(ids)) == 4 and all(ids)

    history = [UserMessage("go")]
    for step in steps:
        history.append(step)
        history += [ToolResultMessage(c.id, c.name, [Text(f"result of {c.id}")]) for c in step.tool_calls]
    history.append(UserMessage("and now?"))
    request = ModelRequest("", history)
    assert request_problems(request) == []
    # every real result survives the projection, none is replaced
    projected = project_tool_protocol(history)
    assert [m.text for m in projected if isinstance(m, ToolResultMessage)] == [f"result of {i}" for i in ids]
    assert not any(TOOL_RESULT_MISSING in m.text for m in projected if isinstance(m, ToolResultMessage))


async def test_an_agent_runs_two_steps_of_id_less_calls_past_a_strict_model():
    async def noop(args, ctx):
        return "ok"

    tools = [Tool(name, "Does nothing.", {"type": "object"}, noop) for name in ("read", "ls")]
    # The replies a server without call ids produces, step after step.
    model = ScriptedModel([chat_without_ids(), chat_without_ids(), say("done")])
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", model, tools=tools))
        result = await agent.run("go")
    assert result.stop_reason == "completed"
    assert [len(r.messages) for r in model.requests] == [1, 4, 7]
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [m.text for m in results] == ["ok"] * 4
