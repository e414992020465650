"""AgentSpec(output_type=T): a run ends with a valid T, retried with the
error the model can act on, or stops output_invalid."""

from __future__ import annotations

import enum
import json

import attrs
import pytest

from agentrio import AgentSpec, Limits, ScriptedModel
from agentrio.messages import UserMessage

from .conftest import record
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
    assert all(a != b for a, b in zip(updates, updates[1:]))
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

    from .fake_openai import start_fake_openai

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
