"""Typed output: asking a model for a value of a type, and reading it back.

``OutputSpec.for_type(T)`` holds everything the loop and the adapters need:
the JSON Schema the model must fill, its strict variant, ``parse`` (answer
text to a ``T``, or ``OutputInvalid`` with a message the model can act on)
and ``partial`` (what a half-written answer says so far, for a UI).

How each adapter asks for it, visible in its request body:

- OpenAI Chat Completions: ``response_format`` of type ``json_schema``;
- OpenAI Responses: ``text.format`` of type ``json_schema``;
- Anthropic: a ``final_result`` tool whose input is the answer, and
  ``tool_choice: any`` (``auto`` with extended thinking, which forbids
  forcing a tool). ``AnswerToolMapper`` turns the call to that tool back
  into answer text, so every adapter ends a typed run with an assistant
  message whose text is the JSON answer, and history holds no tool call
  that the agent never ran.

Providers want an object at the root: any other ``T`` (a list, a union, a
scalar) is asked for as ``{"result": T}`` and unwrapped by ``parse``.

A loop asking for typed output, step by step::

    spec = OutputSpec.for_type(T)              # once per agent: immutable
    request = ModelRequest(system, history, tools, output=spec)
    reader = spec.partial_reader()             # per attempt
    ...on each TextDelta: partial = reader.feed(delta)   # for output_update
    ...when the message stops with "stop":
    try:
        value = spec.parse(message.text)       # RunResult.output
    except OutputInvalid as invalid:
        history.append(UserMessage(invalid.message))     # and ask again

Models without a mechanism (``ScriptedModel``) answer from their script;
``spec.instructions`` is a prompt to add for any other.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import attrs
import jsonschema
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from ..messages.schema import json_schema
from ..messages.typed import InvalidValue, convert, dump, schema_errors
from .events import (
    Done,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from .partial_json import PartialJSON, parse_partial_json
from .strict import openai_strict

if TYPE_CHECKING:
    from .sse_model import StreamMapper

#: The tool that carries the answer where a provider has no native
#: structured output.
OUTPUT_TOOL = "final_result"
_NAME = re.compile(r"[^a-zA-Z0-9_-]")
#: Where a schema keeps the definitions its references point to.
_DEFINITIONS = ("$defs", "definitions")
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)


class OutputInvalid(ValueError):
    """An answer that is not a valid output. ``message`` is written for the
    model: what is wrong, field by field, and what to send instead."""

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or []


@attrs.frozen(eq=False)
class OutputSpec:
    """What a run must end with: a value of ``type``.

    Immutable and safe to share between agents and runs. ``schema`` is the
    JSON object the model is asked to write; ``strict_schema`` its OpenAI
    strict variant, or ``None`` when strict mode could not express it
    without loss (then the schema is sent with ``strict: false`` and
    ``parse`` still checks everything).
    """

    type: Any
    #: Names the schema in ``response_format`` / ``text.format``.
    name: str
    schema: dict[str, Any]
    strict_schema: dict[str, Any] | None
    #: Whether the answer is ``{"result": value}`` rather than the value.
    wrapped: bool
    description: str = ""
    _validator: jsonschema.Draft202012Validator = attrs.field(init=False, repr=False)

    @_validator.default
    def _make_validator(self) -> jsonschema.Draft202012Validator:
        return jsonschema.Draft202012Validator(self.schema)

    @classmethod
    def for_type(cls, hint: Any, *, name: str | None = None, description: str = "") -> OutputSpec:
        """The spec of ``hint`` (any type ``agentrio.messages.schema``
        covers, or a union of them); ``TypeError`` for a type without a
        JSON Schema."""
        return cls._build(hint, json_schema(hint), name, description)

    @classmethod
    def for_schema(
        cls, schema: dict[str, Any], *, name: str | None = None, description: str = ""
    ) -> OutputSpec:
        """The spec of a JSON Schema (``agentrio run --output-schema``): the
        answer is checked against it and ``parse`` returns its JSON data.
        ``ValueError`` for a schema that is not valid JSON Schema, or whose
        ``$ref`` points outside it (no provider fetches another document,
        and neither does ``parse``)."""
        if not isinstance(schema, dict):
            # Documented: a ValueError, whatever is wrong with the schema.
            raise ValueError(  # noqa: TRY004
                f"invalid output schema: expected a JSON object, got {type(schema).__name__}"
            )
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"invalid output schema: {exc.message}") from None
        spec = cls._build(Any, dict(schema), name or schema.get("title"), description)
        if problem := _reference_problem(spec):
            raise ValueError(f"unusable output schema: {problem}")
        return spec

    @classmethod
    def _build(cls, hint: Any, schema: dict[str, Any], name: str | None, description: str) -> OutputSpec:
        wrapped = schema.get("type") != "object"
        if wrapped:
            # Definitions stay at the root, where their references point.
            defs = {key: schema.pop(key) for key in _DEFINITIONS if key in schema}
            schema = {
                "type": "object",
                "properties": {"result": schema},
                "required": ["result"],
                "additionalProperties": False,
                **defs,
            }
        if name is None:
            name = hint.__name__ if isinstance(hint, type) and not wrapped else "output"
        return cls(
            hint,
            _NAME.sub("_", str(name))[:64] or "output",
            schema,
            openai_strict(schema),
            wrapped,
            description,
        )

    @property
    def instructions(self) -> str:
        """A prompt for models with no structured-output mechanism."""
        return "Answer with only a JSON object that fits this JSON Schema:\n" + json.dumps(self.schema)

    def parse(self, text: str) -> Any:
        """The value an answer stands for; ``OutputInvalid`` otherwise."""
        body = text.strip()
        if fenced := _FENCE.match(body):
            body = fenced.group(1)
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise OutputInvalid(
                f"Your answer is not valid JSON ({exc}). Answer with only a JSON object that fits "
                f"the {self.name} schema, without any other text.",
                [str(exc)],
            ) from None
        return self.parse_data(data)

    def parse_data(self, data: Any) -> Any:
        """The value of JSON data the model wrote (the answer tool's input)."""
        try:
            if errors := schema_errors(self._validator, data):
                raise InvalidValue(errors)
            if self.wrapped:
                return convert(data["result"], self.type, path="result")
            return convert(data, self.type)
        except InvalidValue as invalid:
            raise OutputInvalid(
                f"Your answer does not fit the {self.name} schema: "
                + "; ".join(invalid.errors)
                + ". Fix these fields and answer again with the whole JSON object.",
                invalid.errors,
            ) from None

    def partial(self, text: str) -> Any | None:
        """The JSON data a half-written answer holds so far (not yet a
        ``type``: fields may be missing), or ``None`` if nothing yet."""
        return self.unwrap_partial(parse_partial_json(text.strip()))

    def partial_reader(self) -> PartialOutput:
        """Follows one answer as it streams (``partial`` without reading
        the text again at every delta)."""
        return PartialOutput(self)

    def unwrap_partial(self, data: Any) -> Any | None:
        if self.wrapped:
            return data.get("result") if isinstance(data, dict) else None
        return data

    def dump(self, value: Any) -> Any:
        """The JSON data of a value (what ``agentrio run`` prints)."""
        return dump(value, self.type)


def _references(node: Any) -> list[str]:
    if isinstance(node, list):
        return [ref for item in node for ref in _references(item)]
    if not isinstance(node, dict):
        return []
    own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
    return own + [ref for value in node.values() for ref in _references(value)]


def _reference_problem(spec: OutputSpec) -> str | None:
    """Why a ``$ref`` of the schema sent cannot be followed, if one cannot."""
    resolver = Registry().resolver_with_root(DRAFT202012.create_resource(spec.schema))
    for ref in _references(spec.schema):
        if not ref.startswith("#"):
            return f"$ref {ref!r} points to another document, which providers do not fetch"
        if spec.wrapped and not ref.startswith(tuple(f"#/{key}/" for key in _DEFINITIONS)):
            return (
                f"$ref {ref!r} points into the root of a schema that is not an object, which is asked "
                'for as {"result": ...}; point it at a definition under $defs instead'
            )
        try:
            resolver.lookup(ref)
        except Unresolvable:
            return f"$ref {ref!r} points to nothing in the schema"
    return None


class PartialOutput:
    """One typed answer as it streams: ``feed`` each text delta and get what
    the answer holds so far (``OutputSpec.partial`` of all the text fed)."""

    def __init__(self, spec: OutputSpec) -> None:
        self._spec = spec
        self._json = PartialJSON()

    def feed(self, delta: str) -> Any | None:
        self._json.feed(delta)
        return self._spec.unwrap_partial(self._json.value())


class AnswerToolMapper:
    """A ``StreamMapper`` that shows calls to ``OUTPUT_TOOL`` as answer text.

    The call's arguments stream on as text deltas of the same block, and a
    message whose only tool call was the answer stops with ``stop``, not
    ``tool_use``: to the agent it is an ordinary final answer.
    """

    def __init__(self, inner: StreamMapper) -> None:
        self._inner = inner
        self._answers: set[int] = set()
        self._other_calls = 0

    def feed(self, sse: Any) -> list[StreamEvent]:
        return [self._map(e) for e in self._inner.feed(sse)]

    def finish(self) -> list[StreamEvent]:
        return [self._map(e) for e in self._inner.finish()]

    def _map(self, event: StreamEvent) -> StreamEvent:
        if isinstance(event, ToolCallStart):
            if event.name != OUTPUT_TOOL:
                self._other_calls += 1
                return event
            self._answers.add(event.index)
            return TextStart(event.index)
        if isinstance(event, ToolCallDelta) and event.index in self._answers:
            return TextDelta(event.index, event.arguments)
        if isinstance(event, ToolCallEnd) and event.index in self._answers:
            return TextEnd(event.index)
        if (
            isinstance(event, Done)
            and event.stop_reason == "tool_use"
            and self._answers
            and not self._other_calls
        ):
            return Done("stop", event.usage)
        return event
