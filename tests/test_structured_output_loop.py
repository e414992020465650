"""AgentSpec(output_type=T): a run ends with a valid T, retried with the
error the model can act on, or stops output_invalid."""

from __future__ import annotations

import enum
import itertools
import json

import attrs
import pytest

from agentrio import AgentSpec, Limits, ScriptedModel
from agentrio.messages import AssistantMessage, ToolCall, UserMessage
from agentrio.models import Anthropic, OpenAIResponses
from agentrio.models.output import OUTPUT_TOOL

from .conftest import record
from .fake_anthropic import start_fake_anthropic
from .fake_openai import start_fake_openai
from .helpers import say


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen
class Paint:
    colour: Colour
    litres: float


async def test_a_typed_run_ends_with_the_converted_value_and_the_raw_text(rt):
    answer = json.dumps({"colour": "red", "litres": 2.5})
    model = ScriptedModel([say(answer)])
    agent = await rt.create(AgentSpec("a", model, output_type=Paint))
    result = await agent.run("How much paint?")
    assert (result.stop_reason, result.output, result.text) == ("completed", Paint(Colour.RED, 2.5), answer)
    # The request asked for the type.
    assert model.requests[0].output is agent.spec.output_spec


async def test_an_invalid_answer_goes_back_with_the_error_then_a_valid_one_completes(rt):
    model = ScriptedModel([say('{"colour": "green", "litres": 1}'), say('{"colour": "blue", "litres": 1}')])
    agent = await rt.create(AgentSpec("a", model, output_type=Paint))
    result = await agent.run("Paint?")
    assert result.output == Paint(Colour.BLUE, 1.0) and result.steps == 2
    # The second request carries the first answer and what was wrong with it.
    correction = model.requests[1].messages[-1]
    assert isinstance(correction, UserMessage) and "colour" in correction.text
    assert [m.role for m in result.new_messages] == ["user", "assistant", "user", "assistant"]


async def test_past_its_retries_the_run_stops_output_invalid_with_the_error(rt):
    model = ScriptedModel([say("not json at all")] * 2)
    agent = await rt.create(AgentSpec("a", model, output_type=Paint, limits=Limits(output_retries=1)))
    result = await agent.run("Paint?")
    assert result.stop_reason == "output_invalid" and result.output is None
    assert result.error and result.steps == 2


async def test_output_updates_follow_the_answer_as_it_streams(rt):
    answer = json.dumps({"colour": "red", "litres": 12.5})
    agent = await rt.create(AgentSpec("a", ScriptedModel([say(answer)]), output_type=Paint))
    async with record(agent) as rec:
        await agent.run("Paint?")
    updates = [e.output for e in rec.of("output_update")]
    assert updates, "no output_update event"
    assert updates[-1] == {"colour": "red", "litres": 12.5}
    assert all(a != b for a, b in itertools.pairwise(updates))
    # Each comes before the message ends.
    types = [e.type for e in rec.events if e.type in ("output_update", "message_end")]
    assert types.index("message_end", 1) > types.index("output_update")


def test_an_output_type_without_a_schema_is_refused_when_the_spec_is_made():
    class Opaque:
        pass

    with pytest.raises(TypeError):
        AgentSpec("a", ScriptedModel([]), output_type=Opaque)


async def test_over_a_real_chat_completions_stream_the_request_asks_for_the_schema(nursery):
    from agentrio import Runtime
    from agentrio.models import OpenAIChat

    answer = json.dumps({"colour": "blue", "litres": 4})
    server = await start_fake_openai(nursery, [say(answer)])
    model = OpenAIChat("fake", base_url=server.base_url, api_key="k")
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", model, output_type=Paint))
        result = await agent.run("Paint?")
    assert result.output == Paint(Colour.BLUE, 4.0)
    body = server.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "Paint"


@attrs.frozen
class Refusal:
    reason: str


def typed_answer(api: str, data) -> AssistantMessage:
    """An answer as each API gives it: text over Responses, a call to the
    answer tool over Anthropic."""
    if api == "anthropic":
        return AssistantMessage([ToolCall("toolu_1", OUTPUT_TOOL, data)], stop_reason="tool_use")
    return say(json.dumps(data))


async def typed_agent(nursery, rt, api: str, output_type, replies):
    """An agent of ``output_type`` on the real adapter of ``api``, served by a loopback fake."""
    if api == "anthropic":
        server = await start_fake_anthropic(nursery, replies)
        model = Anthropic("fake", base_url=server.base_url, api_key="k")
    else:
        server = await start_fake_openai(nursery, replies)
        model = OpenAIResponses("fake", base_url=server.base_url, api_key="k")
    return server, await rt.create(AgentSpec("a", model, output_type=output_type))


def assert_asks_natively(api: str, body: dict, spec) -> None:
    if api == "anthropic":
        assert body["tools"][-1]["name"] == OUTPUT_TOOL
        assert body["tools"][-1]["input_schema"] == spec.schema
        assert body["tool_choice"] == {"type": "any"}
    else:
        assert body["text"]["format"] == {
            "type": "json_schema",
            "name": spec.name,
            "schema": spec.strict_schema,
            "strict": True,
        }


def answers_and_ends(rec) -> list[str]:
    """output_update and the end of each assistant message, in order, repeats merged."""
    kinds = [
        e.type
        for e in rec.events
        if e.type == "output_update" or (e.type == "message_end" and e.message.role == "assistant")
    ]
    return [kind for i, kind in enumerate(kinds) if i == 0 or kind != kinds[i - 1]]


@pytest.mark.parametrize("api", ["responses", "anthropic"])
async def test_over_each_providers_real_stream_an_invalid_answer_is_retried_then_converted(nursery, rt, api):
    replies = [
        typed_answer(api, {"colour": "green", "litres": 1}),
        typed_answer(api, {"colour": "red", "litres": 2.5}),
    ]
    server, agent = await typed_agent(nursery, rt, api, Paint, replies)
    async with record(agent) as rec:
        result = await agent.run("Paint?")
    assert (result.stop_reason, result.output, result.steps) == ("completed", Paint(Colour.RED, 2.5), 2)
    first, second = (request.body for request in server.requests)
    assert_asks_natively(api, first, agent.spec.output_spec)
    assert_asks_natively(api, second, agent.spec.output_spec)
    # The second request carries the first answer, as text, and what was wrong with it.
    history = second["messages"] if api == "anthropic" else second["input"]
    answer, correction = history[-2:]
    # (The answer tool's call never reaches history: a block of text stands for it.)
    assert answer["role"] == "assistant"
    assert [block["text"] for block in answer["content"]] == [json.dumps({"colour": "green", "litres": 1})]
    assert correction["role"] == "user"
    said = correction["content"]
    said = said if isinstance(said, str) else "".join(block["text"] for block in said)
    assert said.startswith(
        "Your answer does not fit the Paint schema: colour: 'green' is not one of ['red', 'blue']"
    )
    # Each answer streamed as output_update events before its message ended.
    assert answers_and_ends(rec) == ["output_update", "message_end", "output_update", "message_end"]
    assert [e.output for e in rec.of("output_update")][-1] == {"colour": "red", "litres": 2.5}
    assert [e.stop_reason for e in rec.of("agent_end")] == ["completed"]


@pytest.mark.parametrize("api", ["responses", "anthropic"])
async def test_over_each_providers_real_stream_a_union_is_asked_for_wrapped_and_unwrapped(nursery, rt, api):
    server, agent = await typed_agent(
        nursery, rt, api, Paint | Refusal, [typed_answer(api, {"result": {"reason": "out of paint"}})]
    )
    async with record(agent) as rec:
        result = await agent.run("Paint?")
    assert result.output == Refusal("out of paint")
    spec = agent.spec.output_spec
    assert spec.wrapped and list(spec.schema["properties"]) == ["result"]
    assert_asks_natively(api, server.requests[0].body, spec)
    assert answers_and_ends(rec) == ["output_update", "message_end"]
    assert [e.output for e in rec.of("output_update")][-1] == {"reason": "out of paint"}


@pytest.mark.parametrize("api", ["responses", "anthropic"])
async def test_over_each_providers_real_stream_answers_that_never_fit_stop_output_invalid(nursery, rt, api):
    server, agent = await typed_agent(nursery, rt, api, Paint, [typed_answer(api, {"litres": 1})] * 3)
    result = await agent.run("Paint?")
    assert (result.stop_reason, result.output, len(server.requests)) == ("output_invalid", None, 3)
    assert "colour" in result.error
