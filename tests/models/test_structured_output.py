"""Typed output and strict tools, as each adapter puts them on the wire and
reads them back."""

from __future__ import annotations

import dataclasses
import enum
import json

import pytest

from agentrio.messages import UserMessage
from agentrio.models import Anthropic, MessageAssembler, ModelRequest, OpenAIChat, OpenAIResponses, ToolSpec
from agentrio.models.output import OUTPUT_TOOL, OutputInvalid, OutputSpec
from agentrio.models.strict import openai_strict
from agentrio.models.validation import request_problems

from .loopback import Reply
from .recordings import RECORDINGS
from .test_transport import sse


class Kind(enum.Enum):
    CAPITAL = "capital"
    TOWN = "town"


@dataclasses.dataclass
class City:
    name: str
    kind: Kind
    population: int | None = None


CITY = OutputSpec.for_type(City)
CLOSED = ToolSpec(
    "get",
    "Get it.",
    {
        "type": "object",
        "properties": {
            "key": {"type": "string"},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["key"],
        "additionalProperties": False,
    },
)
OPEN = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


def typed_request(output: OutputSpec = CITY, tools=(CLOSED, OPEN)) -> ModelRequest:
    return ModelRequest("sys", [UserMessage("Paris?")], list(tools), output=output)


def test_chat_asks_for_typed_output_with_a_strict_response_format():
    body = OpenAIChat("gpt", api_key="k").request_body(typed_request())
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "City", "schema": CITY.strict_schema, "strict": True},
    }
    assert CITY.strict_schema["required"] == ["name", "kind", "population"]
    assert CITY.strict_schema["properties"]["kind"] == {"enum": ["capital", "town"], "type": "string"}


def test_responses_asks_for_typed_output_with_a_text_format():
    body = OpenAIResponses("gpt", api_key="k").request_body(typed_request())
    assert body["text"] == {
        "format": {"type": "json_schema", "name": "City", "schema": CITY.strict_schema, "strict": True}
    }


def test_a_schema_strict_mode_cannot_express_is_sent_as_it_is_and_not_strict():
    @dataclasses.dataclass
    class Page:
        title: str
        size: int = 10  # omitted means 10: strict mode has no way to omit it

    spec = OutputSpec.for_type(Page)
    assert spec.strict_schema is None
    body = OpenAIChat("gpt", api_key="k").request_body(typed_request(spec))
    assert body["response_format"]["json_schema"] == {"name": "Page", "schema": spec.schema, "strict": False}


def test_anthropic_asks_for_typed_output_with_a_forced_answer_tool():
    body = Anthropic("claude", api_key="k", prompt_cache=False).request_body(typed_request())
    assert [t["name"] for t in body["tools"]] == ["get", "read", OUTPUT_TOOL]
    assert body["tools"][-1]["input_schema"] == CITY.schema
    assert body["tool_choice"] == {"type": "any"}
    assert "response_format" not in body and "text" not in body
    thinking = Anthropic("claude", api_key="k", thinking_budget=1024).request_body(typed_request())
    assert thinking["tool_choice"] == {"type": "auto"}  # thinking forbids forcing a tool


def test_no_output_asked_means_no_mechanism_in_the_request():
    request = ModelRequest("sys", [UserMessage("hi")], [OPEN])
    assert "response_format" not in OpenAIChat("gpt", api_key="k").request_body(request)
    assert "text" not in OpenAIResponses("gpt", api_key="k").request_body(request)
    body = Anthropic("claude", api_key="k").request_body(request)
    assert "tool_choice" not in body and [t["name"] for t in body["tools"]] == ["read"]


def test_tools_are_strict_only_where_their_schema_allows_it():
    chat = OpenAIChat("gpt", api_key="k").request_body(typed_request())["tools"]
    assert chat[0]["function"]["strict"] is True
    assert chat[0]["function"]["parameters"]["required"] == ["key", "limit"]
    assert chat[1]["function"] == {
        "name": "read",
        "description": "Read a file.",
        "parameters": OPEN.parameters,
    }
    responses = OpenAIResponses("gpt", api_key="k").request_body(typed_request())["tools"]
    assert [(t["strict"], t["parameters"]) for t in responses] == [
        (True, openai_strict(CLOSED.parameters)),
        (False, OPEN.parameters),
    ]
    off = OpenAIChat("gpt", api_key="k", strict_tools=False).request_body(typed_request())["tools"]
    assert "strict" not in off[0]["function"] and off[0]["function"]["parameters"] == CLOSED.parameters
    anthropic = Anthropic("claude", api_key="k").request_body(typed_request())["tools"]
    assert anthropic[0]["input_schema"] == CLOSED.parameters and "strict" not in anthropic[0]


@pytest.mark.parametrize("file", ["02", "03", "04", "13", "14", "15", "16", "17"])
def test_tools_are_strict_exactly_where_a_strict_client_made_them_strict(file):
    """Recorded clients that use strict mode chose it tool by tool; the
    same schemas get the same choice here."""
    body = RECORDINGS[file]["request"]["body"]
    for recorded in body["tools"]:
        function = recorded.get("function", recorded)
        strict = openai_strict(function["parameters"])
        assert (strict is not None) == bool(function.get("strict")), function["name"]
        if strict is not None:
            assert strict == function["parameters"]


def test_the_answer_tool_name_is_reserved_in_a_typed_request():
    clash = ToolSpec(OUTPUT_TOOL, "", {"type": "object"})
    assert request_problems(typed_request(tools=[clash])) == [
        "tools: the name 'final_result' is reserved for the answer of a typed request"
    ]
    assert request_problems(ModelRequest("", [UserMessage("hi")], [clash])) == []


ANSWER = '{"name": "Paris", "kind": "capital", "population": 2148000}'


async def assembled(model, request):
    assembler = MessageAssembler()
    async for event in model.stream(request):
        assembler.feed(event)
    return assembler.message()


async def test_chat_streams_the_typed_answer_as_text(server):
    chunks = [
        {
            "model": "gpt",
            "choices": [{"index": 0, "delta": {"content": ANSWER[i : i + 7]}, "finish_reason": None}],
        }
        for i in range(0, len(ANSWER), 7)
    ]
    chunks.append({"model": "gpt", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    server.reply(Reply(chunks=[sse(*((None, c) for c in chunks)) + b"data: [DONE]\n\n"]))
    message = await assembled(OpenAIChat("gpt", base_url=server.url, api_key="k"), typed_request())
    assert message.stop_reason == "stop"
    assert CITY.parse(message.text) == City("Paris", Kind.CAPITAL, 2148000)
    assert server.requests[0].json()["response_format"]["json_schema"]["strict"] is True


async def test_responses_streams_the_typed_answer_as_text(server):
    events = [
        ("response.created", {"type": "response.created", "response": {"model": "gpt"}}),
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message"}},
        ),
        *(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": ANSWER[i : i + 9],
                },
            )
            for i in range(0, len(ANSWER), 9)
        ),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": {"type": "message"}},
        ),
        ("response.completed", {"type": "response.completed", "response": {"status": "completed"}}),
    ]
    server.reply(Reply(chunks=[sse(*events)]))
    message = await assembled(OpenAIResponses("gpt", base_url=server.url, api_key="k"), typed_request())
    assert message.stop_reason == "stop"
    assert CITY.parse(message.text) == City("Paris", Kind.CAPITAL, 2148000)
    assert server.requests[0].json()["text"]["format"]["name"] == "City"


def anthropic_tool_use(*blocks: tuple[str, str, str]) -> bytes:
    """An Anthropic stream of tool_use blocks ``(id, name, input JSON)``,
    each input split in small fragments as the API streams it."""
    events = [
        (
            "message_start",
            {"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 9}}},
        )
    ]
    for index, (call_id, name, arguments) in enumerate(blocks):
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
            )
        )
        for i in range(0, len(arguments), 5):
            delta = {"type": "input_json_delta", "partial_json": arguments[i : i + 5]}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}},
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(*events)


async def test_anthropic_reads_the_answer_tool_call_back_as_a_final_text_answer(server):
    server.reply(Reply(chunks=[anthropic_tool_use(("toolu_1", OUTPUT_TOOL, ANSWER))]))
    model = Anthropic("claude", base_url=server.url, api_key="k")
    events = [e async for e in model.stream(typed_request())]
    assert [e.type for e in events] == ["start", "text_start", *["text_delta"] * 12, "text_end", "done"]
    message = MessageAssembler()
    for e in events:
        message.feed(e)
    message = message.message()
    assert (message.stop_reason, message.tool_calls) == ("stop", [])
    assert CITY.parse(message.text) == City("Paris", Kind.CAPITAL, 2148000)


async def test_anthropic_answer_beside_another_call_still_asks_for_that_call(server):
    server.reply(
        Reply(
            chunks=[anthropic_tool_use(("toolu_1", "get", '{"key": "a"}'), ("toolu_2", OUTPUT_TOOL, ANSWER))]
        )
    )
    message = await assembled(Anthropic("claude", base_url=server.url, api_key="k"), typed_request())
    assert message.stop_reason == "tool_use"
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("get", {"key": "a"})]
    assert json.loads(message.text) == json.loads(ANSWER)


async def test_anthropic_without_typed_output_keeps_a_call_named_like_the_answer_tool(server):
    server.reply(Reply(chunks=[anthropic_tool_use(("toolu_1", OUTPUT_TOOL, "{}"))]))
    request = ModelRequest("", [UserMessage("hi")], [ToolSpec(OUTPUT_TOOL, "", {"type": "object"})])
    message = await assembled(Anthropic("claude", base_url=server.url, api_key="k"), request)
    assert [c.name for c in message.tool_calls] == [OUTPUT_TOOL] and message.stop_reason == "tool_use"


def test_a_raw_schema_keeps_its_definitions_where_its_references_point_when_wrapped():
    schema = {
        "type": "array",
        "items": {"$ref": "#/definitions/City"},
        "definitions": {
            "City": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        },
    }
    spec = OutputSpec.for_schema(schema)
    assert spec.wrapped and spec.schema["definitions"] == schema["definitions"]
    assert spec.parse('{"result": [{"name": "Paris"}]}') == [{"name": "Paris"}]
    with pytest.raises(OutputInvalid, match="name"):
        spec.parse('{"result": [{}]}')


@pytest.mark.parametrize(
    "schema, problem",
    [
        ({"type": "object", "properties": {"a": {"$ref": "other.json"}}}, "points to another document"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}, "points to nothing"),
        ({"type": "array", "items": {"anyOf": [{"type": "string"}, {"$ref": "#"}]}}, "into the root"),
        ([{"type": "object"}], "expected a JSON object"),
    ],
)
def test_a_raw_schema_whose_references_cannot_be_followed_is_refused(schema, problem):
    with pytest.raises(ValueError, match=problem):
        OutputSpec.for_schema(schema)


def test_an_agent_is_refused_an_output_its_provider_refuses_when_its_spec_is_made():
    from agentrio import AgentSpec

    combined = OutputSpec.for_schema({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]})
    with pytest.raises(ValueError, match="AgentSpec.output_type: Anthropic refuses anyOf at the top level"):
        AgentSpec("a", Anthropic("claude", api_key="k"), output_type=combined)
    spec = AgentSpec("a", OpenAIChat("gpt", api_key="k"), output_type=combined)
    assert spec.output_spec is combined
    # Types never put a combinator at the root: a union is asked for wrapped.
    assert AgentSpec("a", Anthropic("claude", api_key="k"), output_type=City | Kind).output_spec.wrapped
