"""Typed output: schemas, strict variants, parsing answers, partial answers."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid
from pathlib import Path
from typing import Any, Literal, TypedDict

import attrs
import jsonschema
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrio.models.output import OutputInvalid, OutputSpec
from agentrio.models.partial_json import parse_partial_json
from agentrio.models.strict import openai_strict


class Mood(enum.Enum):
    HAPPY = "happy"
    GRUMPY = "grumpy"


class Place(TypedDict):
    city: str
    country: str | None


@attrs.frozen
class Visit:
    place: Place
    day: datetime.date
    mood: Mood
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class Trip:
    """A trip.

    Attributes:
        visits: In the order they happened.
    """

    id: uuid.UUID
    visits: list[Visit]
    budget: float | None = None
    style: Literal["slow", "fast"] | None = None


_words = st.text(max_size=6)
places = st.builds(Place, city=_words, country=st.none() | _words)
visits = st.builds(Visit, places, st.dates(), st.sampled_from(Mood), st.none() | _words)
trips = st.builds(
    Trip,
    st.uuids(),
    st.lists(visits, max_size=3),
    st.none() | st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.none() | st.sampled_from(["slow", "fast"]),
)

TRIP = OutputSpec.for_type(Trip)


@settings(max_examples=60, deadline=None)
@given(trips)
def test_an_answer_round_trips_into_the_output_type(trip):
    text = json.dumps(TRIP.dump(trip))
    assert TRIP.parse(text) == trip


@settings(max_examples=60, deadline=None)
@given(trips)
def test_what_a_strict_model_writes_passes_the_original_schema(trip):
    """Every optional field of Trip accepts null, so it has a strict variant;
    an answer that fits the strict variant (every field written) parses."""
    assert TRIP.strict_schema is not None
    data = TRIP.dump(trip)
    jsonschema.validate(data, TRIP.strict_schema)
    jsonschema.validate(data, TRIP.schema)
    assert TRIP.parse(json.dumps(data)) == trip


@settings(max_examples=40, deadline=None)
@given(st.lists(visits, max_size=3) | st.lists(trips, max_size=2))
def test_a_non_object_type_is_asked_for_under_result(values):
    spec = OutputSpec.for_type(list[Visit] | list[Trip])
    assert spec.wrapped and spec.schema["required"] == ["result"]
    assert spec.parse(json.dumps({"result": spec.dump(values)})) == values


def test_scalars_and_unions_are_wrapped_and_unwrapped():
    assert OutputSpec.for_type(int).parse('{"result": 3}') == 3
    assert OutputSpec.for_type(Mood).parse('{"result": "grumpy"}') is Mood.GRUMPY
    either = OutputSpec.for_type(Visit | Place)
    assert either.parse('{"result": {"city": "Oslo", "country": null}}') == {"city": "Oslo", "country": None}
    assert either.name == "output"


def test_an_invalid_answer_says_what_to_fix_field_by_field():
    with pytest.raises(OutputInvalid) as caught:
        TRIP.parse(
            '{"id": "not-a-uuid", "visits": [{"place": {"city": "Oslo"}, "day": "2026-01-01", "mood": "sad"}]}'
        )
    assert caught.value.errors == [
        "visits.0.mood: 'sad' is not one of ['happy', 'grumpy']",
        "visits.0.place: 'country' is a required property",
    ]
    assert caught.value.message.startswith("Your answer does not fit the Trip schema: visits.0.mood:")
    with pytest.raises(OutputInvalid, match="result.1: 'x' is not of type 'integer'"):
        OutputSpec.for_type(list[int]).parse('{"result": [1, "x"]}')


def test_a_conversion_failure_is_named_too():
    with pytest.raises(OutputInvalid) as caught:
        TRIP.parse('{"id": "not-a-uuid", "visits": []}')
    assert caught.value.errors == ["id: badly formed hexadecimal UUID string"]


def test_an_answer_that_is_not_json_asks_for_json_only():
    with pytest.raises(OutputInvalid, match="not valid JSON .* Answer with only a JSON object"):
        TRIP.parse("Here is your trip: {")


def test_an_answer_in_a_code_fence_is_read():
    answer = '```json\n{"id": "00000000-0000-0000-0000-000000000001", "visits": []}\n```'
    assert TRIP.parse(answer) == Trip(uuid.UUID(int=1), [])


class Forbidding(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    title: str = pydantic.Field(description="What it is called.")
    rating: int | None = None


class Lenient(pydantic.BaseModel):
    title: str


def test_a_pydantic_output_arrives_as_the_model():
    spec = OutputSpec.for_type(Forbidding)
    value = spec.parse('{"title": "Dune", "rating": 5}')
    assert type(value) is Forbidding and value.rating == 5
    assert spec.schema["properties"]["title"]["description"] == "What it is called."
    assert spec.strict_schema["required"] == ["title", "rating"]
    assert "default" not in spec.strict_schema["properties"]["rating"]
    # an open model is not tightened behind its author's back
    assert OutputSpec.for_type(Lenient).strict_schema is None


def _object(properties: dict[str, Any], required: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        **extra,
    }


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "a map"),
        ({"type": "object", "properties": {"a": {"type": "string"}}}, "an open object"),
        (_object({"a": {"type": "integer", "default": 1}}, []), "an optional field that cannot be null"),
        (_object({"a": {}}, ["a"]), "any value"),
        (_object({"a": {"type": "array", "prefixItems": [{"type": "integer"}]}}, ["a"]), "a tuple"),
        (_object({"a": {"type": "array", "uniqueItems": True}}, ["a"]), "an unsupported constraint"),
        ({"anyOf": [_object({}, [])]}, "no object at the root"),
    ],
)
def test_a_schema_without_a_lossless_strict_variant_has_none(schema, reason):
    assert openai_strict(schema) is None, reason


def test_the_strict_variant_requires_nullable_fields_and_types_enums():
    schema = _object(
        {
            "a": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "b": {"enum": ["x", None]},
            "c": {"type": "array", "items": {"$ref": "#/$defs/D"}},
        },
        ["c"],
        **{"$defs": {"D": _object({"n": {"enum": [1, 2.5]}}, ["n"])}},
    )
    assert openai_strict(schema) == _object(
        {
            "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "b": {"enum": ["x", None], "type": ["null", "string"]},
            "c": {"type": "array", "items": {"$ref": "#/$defs/D"}},
        },
        ["c", "a", "b"],
        **{"$defs": {"D": _object({"n": {"enum": [1, 2.5], "type": "number"}}, ["n"])}},
    )


def test_partial_answers_show_what_is_written_so_far():
    spec = OutputSpec.for_type(list[Place])
    text = '{"result": [{"city": "Oslo", "country": "NO"}, {"city": "Be'
    assert spec.partial(text) == [{"city": "Oslo", "country": "NO"}, {"city": "Be"}]
    assert spec.partial('{"resu') is None
    assert TRIP.partial('{"id": "00000000-0000-0000-0000-000000000001", "visits": [{"pla') == {
        "id": "00000000-0000-0000-0000-000000000001",
        "visits": [{}],
    }


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)


def _grows_into(partial: Any, final: Any) -> bool:
    """Whether ``partial`` is what ``final`` looks like half written: every
    container holds a prefix of the final one's items, the last of which may
    itself be half written; a string may be cut short; a number may be cut."""
    if isinstance(final, dict):
        if not isinstance(partial, dict) or list(partial) != list(final)[: len(partial)]:
            return False
        keys = list(partial)
        return all(partial[k] == final[k] for k in keys[:-1]) and (
            not keys or _grows_into(partial[keys[-1]], final[keys[-1]])
        )
    if isinstance(final, list):
        if not isinstance(partial, list) or len(partial) > len(final):
            return False
        return all(p == f for p, f in zip(partial[:-1], final)) and (
            not partial or _grows_into(partial[-1], final[len(partial) - 1])
        )
    if isinstance(final, str):
        return isinstance(partial, str) and final.startswith(partial)
    if isinstance(final, (int, float)) and not isinstance(final, bool):
        return isinstance(partial, (int, float)) and not isinstance(partial, bool)
    return partial == final


@settings(max_examples=150, deadline=None)
@given(_json, st.booleans(), st.data())
def test_every_prefix_of_a_json_document_parses_to_a_part_of_it(value, indent, data):
    text = json.dumps(value, indent=2 if indent else None)
    cut = data.draw(st.integers(0, len(text)))
    partial = parse_partial_json(text[:cut])
    assert parse_partial_json(text) == value
    if partial is not None:
        assert _grows_into(partial, value), (text[:cut], partial)


@pytest.mark.parametrize(
    "garbage", ["", "   ", "}", "]]", "Sure! Here it is", '{"a": 1}}', "\\", '{"a": tru']
)
def test_partial_json_never_raises(garbage):
    result = parse_partial_json(garbage)
    assert result is None or isinstance(result, (dict, list, str, int, float, bool))


@pytest.mark.parametrize("depth", [500, 990, 5000])
def test_a_hostile_answer_is_an_invalid_answer_not_a_crash(depth):
    """However deep the nesting, the model gets an answer to act on (which
    one depends on how much stack is left: JSON parsing or validation)."""
    answer = '{"result": ' + "[" * depth + "]" * depth + "}"
    with pytest.raises(OutputInvalid, match="not valid JSON|nested too deeply|is not of type 'integer'"):
        OutputSpec.for_type(list[int]).parse(answer)
    parse_partial_json(answer[:-3])  # returns, whatever it finds


def test_an_output_may_be_a_json_schema_of_its_own():
    spec = OutputSpec.for_schema(
        {
            "title": "Weather report",
            "type": "object",
            "properties": {"degrees": {"type": "number"}},
            "required": ["degrees"],
            "additionalProperties": False,
        }
    )
    assert (spec.name, spec.wrapped, spec.strict_schema is not None) == ("Weather_report", False, True)
    assert spec.parse('{"degrees": 21.5}') == {"degrees": 21.5}
    with pytest.raises(OutputInvalid, match="degrees: 'warm' is not of type 'number'"):
        spec.parse('{"degrees": "warm"}')
    words = OutputSpec.for_schema({"type": "array", "items": {"type": "string"}})
    assert (words.name, words.parse('{"result": ["a", "b"]}')) == ("output", ["a", "b"])
    with pytest.raises(ValueError, match="invalid output schema"):
        OutputSpec.for_schema({"type": "nonsense"})


@settings(max_examples=60, deadline=None)
@given(st.lists(places, max_size=4), st.data())
def test_following_a_stream_delta_by_delta_sees_what_partial_sees(values, data):
    spec = OutputSpec.for_type(list[Place])
    text = json.dumps({"result": values})
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    reader = spec.partial_reader()
    seen = []
    for start, end in zip([0, *cuts], [*cuts, len(text)]):
        seen.append(reader.feed(text[start:end]))
        assert seen[-1] == spec.partial(text[:end])
    assert seen[-1] == values


@pytest.mark.parametrize(
    ("prefix", "seen"),
    [
        ('["ab\\', ["ab"]),
        ('["ab\\\\', ["ab\\"]),
        ('["ab\\u00', ["ab"]),
        ('["ab\\u00e9', ["abé"]),
        ('["ab\\ud83d', ["ab"]),  # half a surrogate pair is no character yet
        ('["ab\\ud83d\\', ["ab"]),
        ('["ab\\ud83d\\ude00', ["ab😀"]),
    ],
)
def test_a_string_cut_inside_an_escape_shows_only_whole_characters(prefix, seen):
    assert parse_partial_json(prefix) == seen


class Author(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    name: str


class Book(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    author: Author = pydantic.Field(description="Who wrote it.")
    file: Path


def test_strict_mode_gets_a_described_reference_inlined_and_only_formats_it_knows():
    spec = OutputSpec.for_type(Book)
    assert spec.schema["properties"]["author"] == {"$ref": "#/$defs/Author", "description": "Who wrote it."}
    assert spec.schema["properties"]["file"]["format"] == "path"
    strict = spec.strict_schema
    assert strict["properties"]["author"] == {
        **strict["$defs"]["Author"],
        "description": "Who wrote it.",
    }
    assert "format" not in strict["properties"]["file"]
    assert openai_strict(_object({"at": {"type": "string", "format": "date-time"}}, ["at"]))["properties"][
        "at"
    ] == {
        "type": "string",
        "format": "date-time",
    }
    book = spec.parse('{"author": {"name": "Le Guin"}, "file": "/books/earthsea.txt"}')
    assert book.author == Author(name="Le Guin") and book.file == Path("/books/earthsea.txt")
