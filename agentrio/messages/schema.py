"""The JSON Schema of a Python type: what a model must write to give us one.

Covered: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``,
``Literal``, ``Enum`` (by value), unions, ``list``/``set``/``frozenset``/
``tuple``, ``dict[str, T]``, ``datetime``/``date``/``time``/``UUID`` (strings
with a ``format``), ``Path``, attrs classes, dataclasses, ``TypedDict``,
``Annotated[T, "description"]`` and, when pydantic is installed, pydantic
models (their own ``model_json_schema``; their ``$defs`` move to the root).

A class becomes a closed object (``additionalProperties: false``) whose
fields without a default are required. Field docs become descriptions: attrs
and dataclass field ``metadata={"description": ...}``, an ``Annotated``
string, or the class docstring's ``Attributes:`` section. Recursive classes
are refused: their schema would not be finite without references.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import re
import sys
import types
import typing
import uuid
from collections import abc
from pathlib import Path, PurePath
from typing import Annotated, Any, Literal, Union

import attrs

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    Any: {},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    datetime.time: {"type": "string", "format": "time"},
    uuid.UUID: {"type": "string", "format": "uuid"},
    Path: {"type": "string"},
    PurePath: {"type": "string"},
}

_ARRAYS = (list, set, frozenset, tuple, abc.Sequence, abc.MutableSequence, abc.Set, abc.MutableSet)
_SETS = (set, frozenset, abc.Set, abc.MutableSet)
_MAPPINGS = (dict, abc.Mapping, abc.MutableMapping)


def is_pydantic_model(hint: Any) -> bool:
    """Whether ``hint`` is a pydantic model class (never imports pydantic)."""
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(hint, type) and issubclass(hint, pydantic.BaseModel)


def is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (Union, types.UnionType)


def is_class_type(hint: Any) -> bool:
    """An attrs class, a dataclass or a ``TypedDict``: JSON objects with named fields."""
    return isinstance(hint, type) and (
        attrs.has(hint) or dataclasses.is_dataclass(hint) or typing.is_typeddict(hint)
    )


@attrs.frozen
class Field:
    name: str
    hint: Any
    required: bool
    default: Any = None
    description: str | None = None


def class_fields(cls: type) -> list[Field]:
    """The fields of an attrs class, a dataclass or a ``TypedDict``, with
    their resolved type hints, whether they are required, and their docs."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except NameError as exc:
        raise TypeError(f"cannot resolve the type hints of {cls.__qualname__}: {exc}") from None
    _, docs = parse_docstring(cls.__dict__.get("__doc__"))
    if typing.is_typeddict(cls):
        return [
            Field(
                name, _strip_required(hint), _typeddict_requires(cls, name, hint), description=docs.get(name)
            )
            for name, hint in hints.items()
        ]
    fields: list[Field] = []
    if attrs.has(cls):
        for a in attrs.fields(cls):
            if not a.init:
                continue
            default = a.default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = attrs.NOTHING
            fields.append(
                Field(
                    a.name,  # the key cattrs reads and writes (not the ``__init__`` alias)
                    hints.get(a.name, a.type),
                    a.default is attrs.NOTHING,
                    None if default is attrs.NOTHING else default,
                    a.metadata.get("description") or docs.get(a.name),
                )
            )
        return fields
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        default = None if f.default is dataclasses.MISSING else f.default
        fields.append(
            Field(f.name, hints[f.name], required, default, f.metadata.get("description") or docs.get(f.name))
        )
    return fields


def _typeddict_requires(cls: type, name: str, hint: Any) -> bool:
    # With string annotations, ``__required_keys__`` misses ``NotRequired``
    # (before Python 3.14): the resolved hint says it.
    origin = typing.get_origin(hint)
    if origin in (typing.Required, typing.NotRequired):
        return origin is typing.Required
    return name in cls.__required_keys__  # type: ignore[attr-defined]


def _strip_required(hint: Any) -> Any:
    if typing.get_origin(hint) in (typing.Required, typing.NotRequired):
        return typing.get_args(hint)[0]
    return hint


def json_default(value: Any) -> tuple[bool, Any]:
    """``(True, json)`` when a default value can be shown in a schema."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, (str, int, float, bool)):
        return True, value
    return False, None


class SchemaBuilder:
    """Builds the schemas of several types that share one root.

    Pydantic models bring ``$defs`` that their ``$ref`` s point to; they are
    collected in ``defs``, to be put at the root of the document holding the
    schemas (``document``).
    """

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self._classes: list[type] = []

    def document(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` as the root of a document: with the collected ``$defs``."""
        return {**schema, "$defs": dict(self.defs)} if self.defs else schema

    def schema(self, hint: Any) -> dict[str, Any]:
        """The JSON Schema of ``hint``; ``TypeError`` for a type that has none."""
        if isinstance(hint, typing.Hashable) and hint in _SCALARS:
            return dict(_SCALARS[hint])
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin is Annotated:
            schema = self.schema(args[0])
            # A string, or a pydantic ``Field(description=...)``.
            descriptions = [d for a in args[1:] if isinstance(d := getattr(a, "description", a), str)]
            if descriptions:
                schema["description"] = descriptions[0]
            return schema
        if isinstance(hint, typing.NewType):
            return self.schema(hint.__supertype__)
        if is_union(hint):
            return {"anyOf": [self.schema(a) for a in args]}
        if origin is Literal:
            return {"enum": list(args)}
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return {"enum": [m.value for m in hint]}
        if hint in _ARRAYS or origin in _ARRAYS:
            return self._array(hint, origin or hint, args)
        if hint in _MAPPINGS or origin in _MAPPINGS:
            return self._mapping(hint, args)
        if is_pydantic_model(hint):
            return self._pydantic(hint)
        if is_class_type(hint):
            return self._object(hint)
        raise TypeError(f"no JSON Schema for the type {hint!r}")

    def _array(self, hint: Any, origin: Any, args: tuple[Any, ...]) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array"}
        if origin is tuple and args and args[-1] is not Ellipsis:
            if args == ((),):  # tuple[()]
                return {**schema, "maxItems": 0}
            return {
                **schema,
                "prefixItems": [self.schema(a) for a in args],
                "items": False,
                "minItems": len(args),
                "maxItems": len(args),
            }
        if args:
            schema["items"] = self.schema(args[0])
        if origin in _SETS:
            schema["uniqueItems"] = True
        return schema

    def _mapping(self, hint: Any, args: tuple[Any, ...]) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object"}
        if len(args) == 2:
            if args[0] is not str:
                raise TypeError(f"no JSON Schema for the type {hint!r}: JSON object keys are strings")
            schema["additionalProperties"] = self.schema(args[1])
        return schema

    def _object(self, cls: type) -> dict[str, Any]:
        if cls in self._classes:
            raise TypeError(f"no JSON Schema for the recursive type {cls.__qualname__}")
        self._classes.append(cls)
        try:
            properties: dict[str, Any] = {}
            required: list[str] = []
            for field in class_fields(cls):
                schema = self.schema(field.hint)
                if field.description and "description" not in schema:
                    schema["description"] = field.description
                if field.required:
                    required.append(field.name)
                else:
                    shown, default = json_default(field.default)
                    if shown and field.default is not None:
                        schema["default"] = default
                properties[field.name] = schema
        finally:
            self._classes.pop()
        schema = {"type": "object", "properties": properties, "required": required}
        schema["additionalProperties"] = False
        if description := class_description(cls):
            schema = {"description": description, **schema}
        return schema

    def _pydantic(self, model: type) -> dict[str, Any]:
        schema: dict[str, Any] = model.model_json_schema()  # type: ignore[attr-defined]
        for name, definition in schema.pop("$defs", {}).items():
            if self.defs.setdefault(name, definition) != definition:
                raise TypeError(f"two different pydantic models are both named {name!r}")
        return schema


def class_description(cls: type) -> str:
    """A class's own docstring up to its field docs; none for the signature
    ``dataclass`` writes when a class has no docstring."""
    doc = cls.__dict__.get("__doc__")
    if dataclasses.is_dataclass(cls) and doc and doc.startswith(f"{cls.__name__}("):
        return ""
    return parse_docstring(doc)[0]


def json_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema document of ``hint`` (see the module docstring)."""
    builder = SchemaBuilder()
    return builder.document(builder.schema(hint))


_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params|Attributes|Fields)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX = re.compile(r"^\s*:(?:param|ivar|var)\s+(?:\S+\s+)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description and the per-name descriptions of a docstring (Google
    style ``Args:`` / ``Attributes:`` sections and Sphinx ``:param x:`` /
    ``:ivar x:`` lines)."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in lines:
        if _SECTION.match(line):
            in_args, current = True, None
            continue
        if m := _SPHINX.match(line):
            current = m.group(1)
            params[current] = m.group(2).strip()
            continue
        if in_args:
            if not line.strip():
                in_args, current = False, None
            elif (m := _ARG_LINE.match(line)) and not line.startswith((" " * 8, "\t\t")):
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif current:
                params[current] = f"{params[current]} {line.strip()}".strip()
            continue
        if current is None and not params:
            summary.append(line)
    description = "\n".join(summary).strip()
    return description, params
