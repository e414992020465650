"""The package's cattrs converter: the one JSON boundary for every value.

Unions of attrs classes are tagged: each member names itself through a class
variable (``type`` for parts, events and journal records, ``role`` for
messages), and that tag is written even when a member is unstructured on its
own, so ``converter.structure(converter.unstructure(x), Union)`` round-trips.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import typing
import uuid
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from pathlib import Path, PurePath
from typing import Any

import cattrs
import jsonschema
from cattrs.errors import AttributeValidationNote, ClassValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn

from .messages import Message
from .parts import Part
from .schema import is_pydantic_model, is_union, json_schema

converter = cattrs.Converter()


def _tagged(
    tag: str, name: str, untagged: Callable[[Any], dict[str, Any]]
) -> Callable[[Any], dict[str, Any]]:
    """Unstructures as ``untagged`` does, the tag first."""
    return lambda obj: {tag: name, **untagged(obj)}


def _structure_bytes(data: Any, _: Any) -> bytes:
    if not isinstance(data, str):
        # Bad data, whatever its type, is a ValueError to structuring.
        raise ValueError(f"expected base64 text, got {type(data).__name__}")  # noqa: TRY004
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not base64: {exc}") from None


# Bytes (an image's, a document's) are base64 text in JSON.
converter.register_unstructure_hook(bytes, lambda data: base64.b64encode(data).decode("ascii"))
converter.register_structure_hook(bytes, _structure_bytes)


def register_tagged_union(union: Any, tag: str) -> None:
    """Teach ``converter`` to (un)structure ``union`` by the ``tag`` class variable.

    The union's own hook is registered first, so a member may contain the
    union itself (an event wrapping an event).
    """
    members: dict[str, type] = {}
    structure_fns: dict[str, Any] = {}

    def structure(data: Any, _: Any) -> Any:
        try:
            name = data[tag]
        except (TypeError, KeyError):
            raise ValueError(f"expected an object with a {tag!r} field, got {data!r}") from None
        try:
            cls = members[name]
        except KeyError:
            raise ValueError(f"unknown {tag} {name!r}; expected one of {sorted(members)}") from None
        return structure_fns[name](data, cls)

    converter.register_structure_hook(union, structure)
    converter.register_structure_hook(
        union | None, lambda data, _: None if data is None else structure(data, union)
    )
    for cls in typing.get_args(union):
        name = getattr(cls, tag)
        if name in members:
            raise TypeError(f"{cls.__name__} and {members[name].__name__} share the tag {name!r}")
        members[name] = cls
        untagged = make_dict_unstructure_fn(cls, converter)
        converter.register_unstructure_hook(cls, _tagged(tag, name, untagged))
    for name, cls in members.items():
        structure_fns[name] = make_dict_structure_fn(cls, converter)


def _structure_user_content(data: Any, _: Any) -> str | list[Part]:
    if isinstance(data, str):
        return data
    return converter.structure(data, list[Part])


register_tagged_union(Part, "type")
converter.register_structure_hook(str | list[Part], _structure_user_content)
register_tagged_union(Message, "role")


def make_typed_converter() -> cattrs.Converter:
    """A converter between JSON data and typed values: tool arguments, tool
    results and typed output (the types ``schema.SchemaBuilder`` covers).

    Strings become ``datetime``/``date``/``time``/``UUID``/``Path``, values
    become ``Enum`` members, pydantic models go through their own
    ``model_validate``/``model_dump``, and a union takes the first member
    whose JSON Schema the data fits (so ``Cat | Dog`` is told apart by shape,
    as the model was told). Structuring expects data that already fits the
    type's schema: it converts, and does not coerce ``"1"`` into ``1``.
    """
    typed = cattrs.Converter(unstruct_collection_overrides={AbstractSet: list})
    for cls, parse, dump in (
        (datetime.datetime, datetime.datetime.fromisoformat, datetime.datetime.isoformat),
        (datetime.date, datetime.date.fromisoformat, datetime.date.isoformat),
        (datetime.time, datetime.time.fromisoformat, datetime.time.isoformat),
        (uuid.UUID, uuid.UUID, str),
        (Path, Path, str),
        (PurePath, PurePath, str),
    ):
        typed.register_structure_hook(cls, _from_string(parse))
        typed.register_unstructure_hook(cls, dump)
    typed.register_structure_hook(type(None), _none)
    typed.register_structure_hook_func(is_pydantic_model, lambda data, cls: cls.model_validate(data))
    typed.register_unstructure_hook_func(is_pydantic_model, lambda obj: obj.model_dump(mode="json"))

    validators: dict[Any, jsonschema.Draft202012Validator] = {}

    def structure_union(data: Any, union: Any) -> Any:
        members = typing.get_args(union)
        if data is None and type(None) in members:
            return None
        for member in members:
            if member not in validators:
                validators[member] = jsonschema.Draft202012Validator(json_schema(member))
            if validators[member].is_valid(data):
                return typed.structure(data, member)
        raise ValueError(f"{data!r} fits none of {union}")

    typed.register_structure_hook_func(is_union, structure_union)

    # cattrs reads ``__required_keys__``, which misses ``NotRequired`` under
    # string annotations; data that fits the schema has the right keys anyway.
    def structure_typeddict(data: Any, cls: Any) -> Any:
        hints = _typeddict_hints(cls)
        out, errors = {}, []
        for key, value in data.items():
            try:
                out[key] = typed.structure(value, hints[key])
            except Exception as exc:  # noqa: BLE001 - every field's error is collected, as cattrs does
                exc.add_note(
                    AttributeValidationNote(f"Structuring {cls.__qualname__} @ {key!r}", key, hints[key])
                )
                errors.append(exc)
        if errors:
            raise ClassValidationError(f"While structuring {cls.__qualname__}", errors, cls)
        return out

    def unstructure_typeddict(obj: Any, cls: Any) -> Any:
        hints = _typeddict_hints(cls)
        return {key: typed.unstructure(value, unstructure_as=hints.get(key)) for key, value in obj.items()}

    typed.register_structure_hook_func(typing.is_typeddict, structure_typeddict)
    typed.register_unstructure_hook_factory(
        typing.is_typeddict, lambda cls: functools.partial(unstructure_typeddict, cls=cls)
    )
    return typed


@functools.cache
def _typeddict_hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _none(data: Any, _: Any) -> None:
    if data is not None:
        raise ValueError(f"expected null, got {data!r}")


def _from_string(parse: Callable[[str], Any]) -> Callable[[Any, Any], Any]:
    def structure(data: Any, cls: Any) -> Any:
        if not isinstance(data, str):
            # Bad data, whatever its type, is a ValueError to structuring.
            raise ValueError(f"expected a string, got {data!r}")  # noqa: TRY004
        return parse(data)

    return structure
