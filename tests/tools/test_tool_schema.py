"""A tool's argument schema: checked when the tool is made, and applied to
every call without a hostile schema or argument freezing or crashing the
loop."""

import pytest

from agentrio import AgentSpec, Runtime, ScriptedModel, ToolResultMessage
from agentrio.tools import Tool
from agentrio.tools.schema import MAX_ARGUMENT_DEPTH
from tests.helpers import calls, say


async def execute(args, ctx):
    return "ok"


def schema_tool(**properties):
    return Tool("t", "", {"type": "object", "properties": properties}, execute)


def nested(depth):
    value = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_a_schema_pattern_runs_in_linear_time():
    # With Python's re, ^(a+)+$ against 40 "a" and a "!" never finishes.
    t = schema_tool(x={"type": "string", "pattern": "^(a+)+$"})
    assert t.argument_errors({"x": "a" * 40}) == []
    assert t.argument_errors({"x": "a" * 40 + "!"}) == [f"x: '{'a' * 40}!' does not match '^(a+)+$'"]


def test_pattern_properties_run_in_linear_time_and_keep_their_meaning():
    t = Tool(
        "t",
        "",
        {
            "type": "object",
            "patternProperties": {"^(a+)+$": {"type": "integer"}, "^x_": {"type": "string"}},
            "additionalProperties": False,
        },
        execute,
    )
    assert t.argument_errors({"aaaa": 1, "x_y": "z"}) == []
    assert t.argument_errors({"a" * 40: "one"}) == [f"{'a' * 40}: 'one' is not of type 'integer'"]
    assert t.argument_errors({"a" * 40 + "!": 1}) == [
        f"Additional properties are not allowed ('{'a' * 40}!' was unexpected)"
    ]


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)", "a{1001}"])
def test_a_schema_pattern_the_linear_engine_cannot_run_is_refused_when_the_tool_is_made(pattern):
    with pytest.raises(
        ValueError, match=r"^Tool.parameters\['properties'\]\['x'\] of 't': invalid regular expression "
    ):
        schema_tool(x={"type": "string", "pattern": pattern})


def test_pattern_properties_with_unevaluated_properties_are_refused():
    schema = {"type": "object", "patternProperties": {"^a": {}}, "unevaluatedProperties": False}
    with pytest.raises(ValueError, match="cannot be combined with unevaluatedProperties"):
        Tool("t", "", schema, execute)


def test_arguments_nested_thousands_deep_are_an_error_of_the_call():
    t = schema_tool(x={"type": "array"})
    assert t.argument_errors({"x": nested(5000)}) == [
        f"the arguments nest {MAX_ARGUMENT_DEPTH + 1} levels deep; at most {MAX_ARGUMENT_DEPTH} are accepted"
    ]
    assert t.argument_errors({"x": nested(MAX_ARGUMENT_DEPTH - 1)}) == []


def test_an_unresolvable_ref_is_an_error_of_the_call():
    t = schema_tool(x={"$ref": "#/$defs/missing"})
    (error,) = t.argument_errors({"x": 1})
    assert error.startswith("the arguments could not be validated, the tool's schema is broken: ")
    assert "#/$defs/missing" in error


async def test_in_a_run_deep_arguments_and_a_broken_schema_are_error_results_and_the_run_goes_on():
    deep = schema_tool(x={"type": "array"})
    broken = Tool("broken", "", {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}, execute)
    model = ScriptedModel([calls(("t", {"x": nested(150)}), ("broken", {"x": 1})), say("done")])
    async with Runtime() as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[deep, broken]))
        result = await agent.run("go")
    assert result.stop_reason == "completed"
    first, second = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert first.is_error and f"at most {MAX_ARGUMENT_DEPTH} are accepted" in first.text
    assert (
        second.is_error and "the tool's schema is broken" in second.text and "PointerToNowhere" in second.text
    )


PLAIN = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "s": {"type": "string", "description": "a name"},
        "b": {"type": "boolean"},
        "z": {"type": "null"},
        "any": {},
    },
    "required": ["n"],
}
PLAIN_ARGS = [
    {"n": 1},
    {"n": 1, "x": 2.5, "s": "a", "b": False, "z": None, "any": [{"deep": 1}]},
    {"n": 1, "extra": {"k": "v"}},
    {"n": True},
    {"n": 1.0},
    {"n": 1.5},
    {"n": "1"},
    {"x": 1},
    {"n": 1, "x": True},
    {"n": 1, "s": 3},
    {"n": 1, "b": 0},
    {"n": 1, "z": False},
]


@pytest.mark.parametrize("closed", [False, True])
@pytest.mark.parametrize("args", PLAIN_ARGS)
def test_plain_schemas_are_judged_by_value_types_exactly_as_jsonschema_judges_them(args, closed):
    # Such schemas skip jsonschema when the arguments plainly fit: the
    # verdict and the errors must be jsonschema's all the same.
    from jsonschema import Draft202012Validator

    schema = {**PLAIN, "additionalProperties": not closed}
    expected = sorted(e.message for e in Draft202012Validator(schema).iter_errors(args))
    errors = Tool("t", "", schema, execute).argument_errors(args)
    assert sorted(e.split(": ", 1)[-1] for e in errors) == expected


def test_a_schema_changed_in_place_applies_to_the_next_call():
    t = schema_tool(n={"type": "integer"})
    assert t.argument_errors({"n": 1}) == []
    t.parameters["properties"]["n"]["type"] = "string"
    assert t.argument_errors({"n": 1}) == ["n: 1 is not of type 'string'"]


def counting_schema_checks(monkeypatch):
    """The schemas checked against the metaschema from now on."""
    from jsonschema import Draft202012Validator

    checked = []
    check = Draft202012Validator.check_schema

    def counted(schema, *args, **kwargs):
        checked.append(schema)
        return check(schema, *args, **kwargs)

    monkeypatch.setattr(Draft202012Validator, "check_schema", counted)
    return checked


def test_tools_made_afresh_from_one_schema_are_checked_once(monkeypatch):
    checked = counting_schema_checks(monkeypatch)

    def fresh():  # a new dict each time, as a tool made for each agent has
        return {"type": "object", "description": "afresh", "properties": {"n": {"type": "integer"}}}

    tools = [Tool("t", "", fresh(), execute) for _ in range(3)]
    assert len(checked) == 1
    # Each keeps its own dict, and a call is judged by it.
    tools[0].parameters["properties"]["n"]["type"] = "string"
    assert tools[0].argument_errors({"n": 1}) == ["n: 1 is not of type 'string'"]
    assert tools[1].argument_errors({"n": 1}) == []
    # The remembered answer is of the schema as it was checked, not as its first dict became.
    Tool("t", "", fresh(), execute)
    assert len(checked) == 1


def test_schemas_that_differ_only_in_json_types_are_each_checked(monkeypatch):
    checked = counting_schema_checks(monkeypatch)

    def with_min_length(value):
        return {
            "type": "object",
            "title": "json types",
            "properties": {"s": {"type": "string", "minLength": value}},
        }

    Tool("t", "", with_min_length(1), execute)
    with pytest.raises(ValueError, match="True is not of type 'integer'"):
        Tool("t", "", with_min_length(True), execute)
    with pytest.raises(ValueError, match="True is not of type 'integer'"):
        Tool("t", "", with_min_length(True), execute)  # refused again, from what was remembered
    Tool("t", "", with_min_length(2), execute)
    # A tuple is no JSON array: such a schema is checked each time, never taken for its list twin.
    with pytest.raises(ValueError, match="is not of type 'array'"):
        Tool("t", "", {"type": "object", "title": "json types", "required": ("s",)}, execute)
    with pytest.raises(ValueError, match="is not of type 'array'"):
        Tool("t", "", {"type": "object", "title": "json types", "required": ("s",)}, execute)
    Tool("t", "", {"type": "object", "title": "json types", "required": ["s"]}, execute)
    assert [schema["properties"]["s"]["minLength"] for schema in checked[:3]] == [1, True, 2]
    assert len(checked) == 6
