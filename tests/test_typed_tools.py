"""Typed tools: schemas from types, converted arguments, typed results as JSON."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Literal, NewType, NotRequired, TypedDict

import attrs
import jsonschema
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrio import AgentSpec, AssistantMessage, ScriptedModel, Text, ToolCall, ToolContext, tool
from agentrio.messages.schema import json_schema
from agentrio.messages.typed import InvalidValue, TypedValue, dump


class Status(enum.Enum):
    OPEN = "open"
    SHIPPED = "shipped"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass(frozen=True)
class Line:
    sku: str
    quantity: int
    price: float
    kind: Literal["item", "fee"] = "item"


class Address(TypedDict):
    street: str
    city: str
    zip: NotRequired[str]


@attrs.frozen
class Order:
    """An order.

    Attributes:
        id: The order's id.
    """

    id: uuid.UUID
    status: Status
    priority: Priority
    lines: list[Line]
    ship_to: Address
    placed: datetime.datetime
    due: datetime.date | None
    attachment: Path | None = None
    dimensions: tuple[int, int, str] = (0, 0, "cm")
    totals: dict[str, float] = attrs.field(factory=dict, metadata={"description": "Sums by currency."})
    tags: frozenset[str] = frozenset()


_words = st.text(max_size=8)
_floats = st.floats(allow_nan=False, allow_infinity=False, width=32)
lines = st.builds(Line, _words, st.integers(-5, 5), _floats, st.sampled_from(["item", "fee"]))
addresses = st.builds(Address, street=_words, city=_words) | st.builds(
    Address, street=_words, city=_words, zip=_words
)
orders = st.builds(
    Order,
    id=st.uuids(),
    status=st.sampled_from(Status),
    priority=st.sampled_from(Priority),
    lines=st.lists(lines, max_size=3),
    ship_to=addresses,
    placed=st.datetimes(timezones=st.none() | st.just(datetime.UTC)),
    due=st.none() | st.dates(),
    attachment=st.none() | st.builds(Path, st.sampled_from(["a.txt", "/tmp/b", "c/d"])),
    dimensions=st.tuples(st.integers(), st.integers(), _words),
    totals=st.dictionaries(_words, _floats, max_size=2),
    tags=st.frozensets(_words, max_size=3),
)


@settings(max_examples=80, deadline=None)
@given(orders)
def test_every_type_round_trips_through_schema_validation_and_conversion(order):
    typed = TypedValue(Order)
    data = json.loads(json.dumps(dump(order)))
    assert typed.errors(data) == []
    assert typed.validate(data) == order


@settings(max_examples=40, deadline=None)
@given(st.lists(orders | lines | addresses, max_size=3))
def test_union_members_are_told_apart_by_their_schema(values):
    typed = TypedValue(list[Order | Line | Address])
    data = json.loads(json.dumps(dump(values)))
    assert typed.validate(data) == values
    assert [type(v) for v in typed.validate(data)] == [type(v) for v in values]


def test_a_class_becomes_a_closed_object_with_its_field_docs():
    schema = json_schema(Order)
    assert schema["description"] == "An order."
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["id", "status", "priority", "lines", "ship_to", "placed", "due"]
    props = schema["properties"]
    assert props["id"] == {"type": "string", "format": "uuid", "description": "The order's id."}
    assert props["totals"]["description"] == "Sums by currency."
    assert props["status"] == {"enum": ["open", "shipped"]}
    assert props["priority"] == {"enum": [1, 2]}
    assert props["placed"] == {"type": "string", "format": "date-time"}
    assert props["due"] == {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]}
    assert props["dimensions"]["prefixItems"] == [
        {"type": "integer"},
        {"type": "integer"},
        {"type": "string"},
    ]
    assert "default" not in props["dimensions"]  # a tuple is no JSON scalar
    assert props["ship_to"]["required"] == ["street", "city"]
    assert props["lines"]["items"]["properties"]["kind"] == {"enum": ["item", "fee"], "default": "item"}
    jsonschema.Draft202012Validator.check_schema(schema)


@dataclasses.dataclass
class Point:
    x: int = dataclasses.field(metadata={"description": "Across."})
    y: int = 0


class Shape(pydantic.BaseModel):
    name: str = pydantic.Field(description="What to call it.")
    corners: list[Point]

    @pydantic.field_validator("name")
    @classmethod
    def no_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


received: list[object] = []


@tool
async def draw(
    shape: Shape,
    color: Status,
    at: Point,
    when: datetime.datetime,
    label: Annotated[str, "The caption."] = "",
    ctx: ToolContext = None,
) -> list[Point]:
    """Draw a shape.

    Args:
        color: Which status color.
    """
    received.append((shape, color, at, when, label))
    return [at, *shape.corners]


def _ctx() -> ToolContext:
    return ToolContext("agent", "session", "call_1", "draw", report=lambda p: None)


ARGS = {
    "shape": {"name": "tri", "corners": [{"x": 1}, {"x": 2, "y": 3}]},
    "color": "shipped",
    "at": {"x": 5, "y": 6},
    "when": "2026-12-01T05:00:00+00:00",
}


async def test_a_tool_receives_converted_values_and_its_result_is_json():
    received.clear()
    out = await draw.execute(ARGS, _ctx())
    shape, color, at, when, label = received[0]
    assert color is Status.SHIPPED
    assert type(shape) is Shape and shape.corners == [Point(1), Point(2, 3)]
    assert at == Point(5, 6) and label == ""
    assert when == datetime.datetime(2026, 12, 1, 5, tzinfo=datetime.UTC)
    assert json.loads(out) == [{"x": 5, "y": 6}, {"x": 1, "y": 0}, {"x": 2, "y": 3}]


def test_a_typed_tool_schema_holds_pydantic_definitions_at_its_root():
    params = draw.parameters
    assert params["required"] == ["shape", "color", "at", "when"]
    assert params["properties"]["shape"]["properties"]["name"]["description"] == "What to call it."
    assert params["properties"]["shape"]["properties"]["corners"]["items"] == {"$ref": "#/$defs/Point"}
    assert "Point" in params["$defs"]
    assert params["properties"]["color"] == {
        "enum": ["open", "shipped"],
        "description": "Which status color.",
    }
    assert params["properties"]["label"] == {"type": "string", "description": "The caption.", "default": ""}
    assert params["properties"]["at"]["properties"]["x"]["description"] == "Across."
    assert draw.argument_errors(ARGS) == []


def test_invalid_arguments_name_the_failing_field():
    bad = {**ARGS, "at": {"x": "five"}, "color": "red", "shape": {"name": "t", "corners": [{"y": 1}]}}
    assert draw.argument_errors(bad) == [
        "at.x: 'five' is not of type 'integer'",
        "color: 'red' is not one of ['open', 'shipped']",
        "shape.corners.0: 'x' is a required property",
    ]


async def test_a_conversion_that_fails_is_an_error_result_naming_the_field():
    received.clear()
    result = await draw.execute({**ARGS, "when": "yesterday", "shape": {"name": " ", "corners": []}}, _ctx())
    assert result.is_error
    assert result.content == (
        "invalid arguments: shape: name: Value error, must not be blank; "
        "when: Invalid isoformat string: 'yesterday'"
    )
    assert received == []


def test_invalid_value_lists_every_failing_field():
    with pytest.raises(InvalidValue) as caught:
        TypedValue(Line).validate({"sku": 1, "quantity": 1.5, "price": 2, "extra": True})
    assert caught.value.errors == [
        "Additional properties are not allowed ('extra' was unexpected)",
        "quantity: 1.5 is not of type 'integer'",
        "sku: 1 is not of type 'string'",
    ]


async def test_a_tool_may_return_any_typed_value():
    @tool
    async def report() -> dict[str, object]:
        return {"status": Status.OPEN, "at": datetime.date(2026, 1, 2), "id": uuid.UUID(int=1), "tags": {"a"}}

    @tool
    async def nothing() -> None:
        return None

    assert json.loads(await report.execute({}, _ctx())) == {
        "status": "open",
        "at": "2026-01-02",
        "id": "00000000-0000-0000-0000-000000000001",
        "tags": ["a"],
    }
    assert await nothing.execute({}, _ctx()) == "null"


@attrs.define
class Node:
    children: list[Node]


def test_types_without_a_schema_are_refused_naming_the_parameter():
    async def walk(tree: Node) -> str:
        return ""

    async def counts(by_number: dict[int, str]) -> str:
        return ""

    with pytest.raises(TypeError, match="parameter 'tree': no JSON Schema for the recursive type"):
        tool(walk)
    with pytest.raises(TypeError, match="parameter 'by_number': .*JSON object keys are strings"):
        tool(counts)


async def test_an_agent_calls_a_typed_tool_and_reads_its_result_as_json(rt):
    received.clear()
    model = ScriptedModel(
        [
            AssistantMessage([ToolCall("call_1", "draw", ARGS)]),
            AssistantMessage([Text("drawn")]),
        ]
    )
    agent = await rt.create(AgentSpec("painter", model, tools=[draw]))
    result = await agent.run("draw it")
    assert result.stop_reason == "completed"
    assert received[0][1] is Status.SHIPPED
    tool_result = model.requests[1].messages[-1]
    assert not tool_result.is_error
    assert json.loads(tool_result.text) == [{"x": 5, "y": 6}, {"x": 1, "y": 0}, {"x": 2, "y": 3}]


UserId = NewType("UserId", int)


async def test_abstract_containers_newtypes_and_field_descriptions_in_annotated():
    @tool
    async def tag(
        users: Sequence[UserId],
        labels: Mapping[str, Annotated[int, pydantic.Field(description="How many.")]],
    ) -> str:
        return f"{list(users)} {dict(labels)}"

    assert tag.parameters["properties"] == {
        "users": {"type": "array", "items": {"type": "integer"}},
        "labels": {"type": "object", "additionalProperties": {"type": "integer", "description": "How many."}},
    }
    assert await tag.execute({"users": [1, 2], "labels": {"a": 3}}, _ctx()) == "[1, 2] {'a': 3}"


def test_a_tool_whose_hints_cannot_be_resolved_is_a_clear_error():
    async def lost(x: Missing) -> str:  # noqa: F821
        return ""

    with pytest.raises(
        TypeError, match="@tool lost: cannot resolve its type hints: name 'Missing' is not defined"
    ):
        tool(lost)


def test_a_huge_wrong_value_is_not_echoed_back_whole():
    errors = draw.argument_errors({**ARGS, "label": ["x" * 100_000]})
    assert len(errors) == 1 and len(errors[0]) < 320
    assert errors[0].startswith("label: ['xxx") and errors[0].endswith("xxx'] is not of type 'string'")


# --- any composition of the supported types ---------------------------------

_LEAVES = [
    (str, st.text(max_size=5)),
    (int, st.integers()),
    (float, st.floats(allow_nan=False, allow_infinity=False)),
    (bool, st.booleans()),
    (type(None), st.none()),
    (datetime.datetime, st.datetimes(timezones=st.none() | st.just(datetime.UTC))),
    (datetime.date, st.dates()),
    (datetime.time, st.times()),
    (uuid.UUID, st.uuids()),
    (Path, st.sampled_from([Path("a"), Path("/b/c")])),
    (Status, st.sampled_from(Status)),
    (Priority, st.sampled_from(Priority)),
    (Literal["x", 2, True], st.sampled_from(["x", 2, True])),
]
_made = iter(range(10**9))


def _record(kind: str, fields: list[tuple[type, st.SearchStrategy]]):
    names = [f"f{i}" for i in range(len(fields))]
    name = f"{kind.title()}{next(_made)}"
    if kind == "dataclass":
        cls = dataclasses.make_dataclass(name, [(n, t) for n, (t, _) in zip(names, fields)])
        return cls, st.builds(cls, *(s for _, s in fields))
    if kind == "attrs":
        cls = attrs.make_class(name, {n: attrs.field(type=t) for n, (t, _) in zip(names, fields)})
        return cls, st.builds(cls, *(s for _, s in fields))
    cls = TypedDict(name, {n: t for n, (t, _) in zip(names, fields)})
    return cls, st.fixed_dictionaries({n: s for n, (_, s) in zip(names, fields)})


def _compose(inner: st.SearchStrategy) -> st.SearchStrategy:
    def one(pair):
        hint, values = pair
        return st.sampled_from(
            [
                (list[hint], st.lists(values, max_size=3)),
                (tuple[hint, ...], st.lists(values, max_size=3).map(tuple)),
                (dict[str, hint], st.dictionaries(st.text(max_size=3), values, max_size=3)),
                (hint | None, st.none() | values),
            ]
        )

    def record(pairs):
        return st.sampled_from(["dataclass", "attrs", "typeddict"]).map(lambda kind: _record(kind, pairs))

    pair_of_two = st.tuples(inner, inner).map(
        lambda ab: (tuple[ab[0][0], ab[1][0]], st.tuples(ab[0][1], ab[1][1]))
    )
    return inner.flatmap(one) | st.lists(inner, min_size=1, max_size=4).flatmap(record) | pair_of_two


typed_values = st.recursive(st.sampled_from(_LEAVES), _compose, max_leaves=8).flatmap(
    lambda pair: st.tuples(st.just(pair[0]), pair[1])
)


@settings(max_examples=150, deadline=None)
@given(typed_values)
def test_any_composition_of_the_types_round_trips_through_schema_validation_and_conversion(typed_value):
    hint, value = typed_value
    typed = TypedValue(hint)
    jsonschema.Draft202012Validator.check_schema(typed.schema)
    data = json.loads(json.dumps(dump(value, hint)))
    assert typed.errors(data) == []
    assert typed.validate(data) == value


@attrs.define
class Aliased:
    _secret: int
    shown: int = attrs.field(alias="visible")


def test_attrs_fields_are_named_as_the_converter_names_them():
    typed = TypedValue(Aliased)
    assert list(typed.schema["properties"]) == ["_secret", "shown"]
    assert typed.validate({"_secret": 1, "shown": 2}) == Aliased(1, 2)


def _leaf_paths(data, path=()):
    if isinstance(data, dict) and data:
        for key, item in data.items():
            yield from _leaf_paths(item, (*path, key))
    elif isinstance(data, list) and data:
        for index, item in enumerate(data):
            yield from _leaf_paths(item, (*path, index))
    else:
        yield path


def _replaced(data, path, new):
    if not path:
        return new
    copy = dict(data) if isinstance(data, dict) else list(data)
    copy[path[0]] = _replaced(data[path[0]], path[1:], new)
    return copy


@settings(max_examples=150, deadline=None)
@given(typed_values, st.data())
def test_a_wrong_value_anywhere_is_named_by_its_field(typed_value, data):
    """The error names the field the wrong value is in, the union around it
    (which cannot know which member was meant), or a field inside it."""
    hint, value = typed_value
    good = json.loads(json.dumps(dump(value, hint)))
    path = data.draw(st.sampled_from(list(_leaf_paths(good))))
    validator = jsonschema.Draft202012Validator(TypedValue(hint).schema)
    wrong = [{"not": ["what", "was", "asked"]}, 0.5, "?", True, [[["?"]]]]
    errors = next((e for w in wrong if (e := list(validator.iter_errors(_replaced(good, path, w))))), [])
    assert errors
    for error in errors:  # the field itself, a union around it, or a field inside it
        where = tuple(error.absolute_path)
        assert where == path[: len(where)] or where[: len(path)] == path, (path, where, error.message)


def test_typed_tools_and_output_work_where_pydantic_cannot_be_imported(tmp_path):
    script = tmp_path / "no_pydantic.py"
    script.write_text(
        """
import sys
sys.modules["pydantic"] = None  # import pydantic raises ImportError
import dataclasses, enum, json
from agentrio import AgentSpec, AssistantMessage, ScriptedModel, Text, ToolCall, run_sync, tool

class Unit(enum.Enum):
    C = "celsius"

@dataclasses.dataclass
class Reading:
    city: str
    unit: Unit

@tool
async def temperature(reading: Reading) -> Reading:
    \"\"\"Echo a reading.\"\"\"
    assert reading.unit is Unit.C
    return reading

model = ScriptedModel([
    AssistantMessage([ToolCall("c1", "temperature", {"reading": {"city": "Oslo", "unit": "celsius"}})]),
    AssistantMessage([Text(json.dumps({"city": "Oslo", "unit": "celsius"}))]),
])
result = run_sync(AgentSpec("a", model, tools=[temperature], output_type=Reading), "How warm?")
print(result.stop_reason, result.output, model.requests[1].messages[-1].text)
"""
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        'completed Reading(city=\'Oslo\', unit=<Unit.C: \'celsius\'>) {"city": "Oslo", "unit": "celsius"}'
    )
