"""Typed values at the JSON boundary: a type's schema, checking data against
it, and converting between the data and the type's values.

Errors name the failing field by its path in the data (``items.1.when:
...``), so that a model reading them knows what to fix.
"""

from __future__ import annotations

import re
from typing import Any

import cattrs
import jsonschema

from .converter import make_typed_converter
from .schema import SchemaBuilder

#: The converter for typed values, shared: its hooks hold no state but caches.
typed_converter = make_typed_converter()


class InvalidValue(ValueError):
    """Data that does not fit a type. ``errors`` has one line per failing
    field, each starting with the field's path."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


#: Longest message kept per failing field: a message quotes the value, and
#: a model that sent a huge wrong value must not get it all back.
MAX_ERROR_CHARS = 300


def schema_errors(validator: jsonschema.Draft202012Validator, data: Any, path: str = "") -> list[str]:
    """Why ``data`` does not fit the validator's schema, one line per failing
    field, sorted by field."""
    try:
        if validator.is_valid(data):
            return []
        errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
        return [_describe(e, path) for e in errors]
    except RecursionError:
        return [f"{path or 'the value'}: nested too deeply"]


def _describe(error: jsonschema.ValidationError, path: str) -> str:
    field = ".".join(str(p) for p in (*([path] if path else []), *error.absolute_path))
    message = error.message
    if len(message) > MAX_ERROR_CHARS:  # keep the end: it says what was expected
        message = message[: MAX_ERROR_CHARS * 2 // 3] + " … " + message[-MAX_ERROR_CHARS // 3 :]
    return f"{field}: {message}" if field else message


_CATTRS_STEP = re.compile(r"\.([^.\[]+)|\[(?:'((?:[^'\\]|\\.)*)'|(\d+))\]")


def conversion_errors(exc: Exception, path: str = "") -> list[str]:
    """The lines of a conversion failure, in the same form as ``schema_errors``."""
    lines = []
    for line in cattrs.transform_error(exc, path="$", format_exception=_format):
        message, _, where = line.rpartition(" @ ")
        steps = [path] if path else []
        steps += [next(g for g in m.groups() if g is not None) for m in _CATTRS_STEP.finditer(where[1:])]
        lines.append(f"{'.'.join(steps)}: {message}" if steps else message)
    return lines


def _format(exc: BaseException, cls: Any) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors) and type(exc).__name__ == "ValidationError":  # pydantic's own
        return "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" if e["loc"] else e["msg"] for e in errors()
        )
    if isinstance(exc, ValueError) and str(exc):
        return str(exc)
    return cattrs.v.format_exception(exc, cls)


class TypedValue:
    """A type's JSON Schema and the way from JSON data to its values and back.

    ``validate(data)`` checks ``data`` against ``schema`` (every failing field
    is named), then converts it: an ``Enum`` field gets its member, a
    dataclass field its instance, a pydantic model field its model.
    ``dump(value)`` is the JSON data of a value. Both raise
    ``InvalidValue``, never another exception, for data or values that do
    not fit.
    """

    def __init__(self, hint: Any) -> None:
        builder = SchemaBuilder()
        self.type = hint
        self.schema = builder.document(builder.schema(hint))
        self._validator = jsonschema.Draft202012Validator(self.schema)

    def __repr__(self) -> str:
        return f"TypedValue({self.type!r})"

    def errors(self, data: Any) -> list[str]:
        """Why ``data`` does not fit the schema; empty when it does."""
        return schema_errors(self._validator, data)

    def validate(self, data: Any) -> Any:
        if errors := self.errors(data):
            raise InvalidValue(errors)
        return convert(data, self.type)

    def dump(self, value: Any) -> Any:
        return dump(value, self.type)


def convert(data: Any, hint: Any, path: str = "") -> Any:
    """``data`` (already valid against the schema of ``hint``) as a ``hint``;
    ``InvalidValue`` when a conversion fails (a malformed date, a pydantic
    validator that refuses)."""
    try:
        return typed_converter.structure(data, hint)
    except Exception as exc:  # noqa: BLE001 - user types' converters may raise anything
        raise InvalidValue(conversion_errors(exc, path)) from None


def dump(value: Any, hint: Any = None) -> Any:
    """The JSON data of ``value`` (typed as ``hint`` when given)."""
    try:
        if hint is None:
            return typed_converter.unstructure(value)
        return typed_converter.unstructure(value, unstructure_as=hint)
    except Exception as exc:  # noqa: BLE001 - user types' converters may raise anything
        raise InvalidValue([f"cannot write {type(value).__name__} as JSON: {exc}"]) from None
