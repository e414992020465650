"""Messages refuse content JSON cannot carry back, where they are made."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrio import AssistantMessage, Text, Thinking, ToolCall, ToolResultMessage, Usage, UserMessage
from agentrio.messages import Message, Part, converter, is_str_or_parts, json_data
from agentrio.messages.checks import MAX_JSON_DEPTH
from agentrio.models.assembler import parse_tool_call


def _nested(depth):
    value = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: UserMessage(None),
            "UserMessage.content: expected a str or a list of Text/Thinking/ToolCall/Image/Document parts, got None",
        ),
        (
            lambda: UserMessage([1, 2]),
            "UserMessage.content: expected a str or a list of Text/Thinking/ToolCall/Image/Document parts, got list item 0 of type int",
        ),
        (lambda: UserMessage([Text("a"), "b"]), "got list item 1 of type str"),
        (lambda: UserMessage((Text("a"),)), "got a value of type tuple"),
        (
            lambda: ToolResultMessage("c", "t", [1, "two", None]),
            "ToolResultMessage.content: expected a list of Text/Thinking/ToolCall/Image/Document parts, got list item 0 of type int",
        ),
        (lambda: ToolResultMessage("c", "t", "text"), "ToolResultMessage.content: expected a list"),
        (lambda: ToolResultMessage(None, "t"), "ToolResultMessage.tool_call_id: expected a str, got None"),
        (lambda: ToolResultMessage("c", "t", is_error="yes"), "ToolResultMessage.is_error: expected a bool"),
        (lambda: AssistantMessage(Text("a")), "AssistantMessage.content: expected a list"),
        (lambda: AssistantMessage([], stop_reason="done"), "AssistantMessage.stop_reason: expected one of"),
        (lambda: AssistantMessage([], usage={}), "AssistantMessage.usage: expected a Usage"),
        (lambda: AssistantMessage([], model=None), "AssistantMessage.model: expected a str"),
        (lambda: Text(5), "Text.text: expected a str, got a value of type int"),
        (lambda: Text(b"bytes"), "Text.text: expected a str, got a value of type bytes"),
        (lambda: Thinking("t", signature=1), "Thinking.signature: expected a str or None"),
        (
            lambda: ToolCall("c", "t", [1]),
            "ToolCall.arguments: expected a dict of JSON data, got a value of type list",
        ),
        (
            lambda: ToolCall("c", "t", {"a": {1, 2}}),
            "ToolCall.arguments: expected a dict of JSON data, got a value of type set at ['a']",
        ),
        (lambda: ToolCall("c", "t", {"a": [1, (2,)]}), "got a value of type tuple at ['a'][1]"),
        (lambda: ToolCall("c", "t", {"a": {3: 1}}), "got a key of type int at ['a']"),
        (lambda: ToolCall("c", "t", {"a": math.nan}), "nan at ['a'] (JSON has no NaN or infinity)"),
        (lambda: ToolCall("c", "t", _nested(5000)), f"data nested more than {MAX_JSON_DEPTH} deep"),
        (lambda: ToolCall(1, "t"), "ToolCall.id: expected a str"),
        (lambda: Usage(1.5), "Usage.input_tokens: expected an int"),
        (lambda: Usage(output_tokens=True), "Usage.output_tokens: expected an int"),
    ],
)
def test_type_invalid_content_is_refused_naming_the_field(make, says):
    with pytest.raises(TypeError) as raised:
        make()
    assert says in str(raised.value)


def test_tool_result_details_are_kept_as_json_data_or_their_repr():
    class Odd:
        def __repr__(self):
            return "<odd>"

    class Hostile:
        def __repr__(self):
            raise RuntimeError("no")

    assert ToolResultMessage("c", "t", details={"a": [1, 2.5]}).details == {"a": [1, 2.5]}
    assert ToolResultMessage("c", "t", details=(1, {2: Odd()})).details == [1, {"2": "<odd>"}]
    assert ToolResultMessage("c", "t", details=math.inf).details == "inf"
    assert ToolResultMessage("c", "t", details=Hostile()).details == "<a Hostile that cannot be shown>"
    cycle = []
    cycle.append(cycle)
    assert json_data(cycle) == "[[...]]"


def test_a_tool_result_can_check_its_content_with_the_messages_rule():
    import attrs

    @attrs.frozen
    class Result:
        content: object = attrs.field(validator=is_str_or_parts)

    assert Result("ok").content == "ok"
    with pytest.raises(
        TypeError, match=r"Result.content: expected a str or a list of .*, got list item 2 of type NoneType"
    ):
        Result([Text("a"), Text("b"), None])


def test_model_arguments_a_journal_cannot_hold_are_kept_raw():
    for raw in ('{"x": NaN}', '{"x": Infinity}', '{"a":' * 5000 + "1" + "}" * 5000, "[1]", '"s"'):
        call = parse_tool_call("c", "t", raw)
        assert (call.arguments, call.raw_arguments) == ({}, raw)
    assert parse_tool_call("c", "t", '{"x": 1}').arguments == {"x": 1}


# Everything a careless or hostile caller might put in a field.
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=6)
    | st.sampled_from(["\ud800", "a\udfff", "\x00"])  # lone surrogates, NUL
    | st.binary(max_size=4)
)
_parts = (
    st.builds(Text, st.text(max_size=5))
    | st.builds(Thinking, st.text(max_size=5), signature=st.none() | st.text(max_size=5))
    | st.builds(
        ToolCall,
        st.text(max_size=3),
        st.text(max_size=3),
        st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=3), max_size=2),
    )
)
_anything = st.recursive(
    _scalars | _parts,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner)
        | st.frozensets(st.integers(), max_size=2)
        | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=3)
    ),
    max_leaves=8,
)


def _make(kind, value, other):
    match kind:
        case "user":
            return UserMessage(value)
        case "assistant":
            return AssistantMessage(value, model=other)
        case "result":
            return ToolResultMessage("c", "t", value, is_error=other, details=other)
        case "text":
            return AssistantMessage([Text(value)])
        case "thinking":
            return AssistantMessage([Thinking("t", signature=value, id=other)])
        case "call":
            return AssistantMessage([ToolCall("c", "t", value, raw_arguments=other)])
        case "usage":
            return AssistantMessage([], usage=Usage(value, other))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["user", "assistant", "result", "text", "thinking", "call", "usage"]),
    _anything,
    _anything,
)
def test_a_message_is_refused_or_reads_back_exactly_through_json(kind, value, other):
    try:
        message = _make(kind, value, other)
    except TypeError:
        return
    text = json.dumps(converter.unstructure(message))
    assert converter.structure(json.loads(text), Message) == message


@given(st.lists(_parts, max_size=3))
def test_every_part_reads_back_exactly_through_json(parts):
    for part in parts:
        assert converter.structure(json.loads(json.dumps(converter.unstructure(part))), Part) == part


async def test_a_malformed_message_is_refused_before_it_reaches_an_agent(tmp_path):
    from agentrio import AgentSpec, Runtime, ScriptedModel

    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([AssistantMessage([Text("hi")])])))
        with pytest.raises(TypeError, match="UserMessage.content"):
            await agent.run(UserMessage(None))
        assert (await agent.run("hello")).stop_reason == "completed"


async def test_hostile_but_valid_content_is_journaled_and_restored_exactly(tmp_path):
    from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore, Tool

    odd = "nul\x00 surrogate\ud800 emoji\U0001f600 bidi\u202e"
    deep = _nested(MAX_JSON_DEPTH - 2)  # the deepest arguments allowed

    async def echo(args, ctx):
        return odd + args["text"]

    tools = [Tool("echo", "Echo.", {"type": "object"}, echo)]
    replies = [
        AssistantMessage(
            [Thinking(odd, signature=odd), Text(odd), ToolCall("c1", "echo", {"text": odd, "deep": deep})]
        ),
        AssistantMessage([Text(odd)]),
    ]
    db = tmp_path / "s.db"
    async with Runtime(SQLiteStore(db)) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel(replies), tools=tools), "s1")
        result = await agent.run(UserMessage([Text(odd)]))
        history = list(agent.messages)
    assert result.stop_reason == "completed" and len(history) == 4
    async with Runtime(SQLiteStore(db)) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([]), tools=tools), "s1")
        assert list(agent.messages) == history
