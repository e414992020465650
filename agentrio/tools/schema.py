"""Argument schemas: checked once when a tool is made, then applied to every
call's arguments without letting a hostile schema or argument freeze or
crash the loop.

jsonschema matches ``pattern`` and ``patternProperties`` with Python's
backtracking ``re``, so a schema's ``^(a+)+$`` would freeze validation; the
validator here matches them with RE2 (see ``regex``) instead. Arguments
nested deeper than ``MAX_ARGUMENT_DEPTH`` are refused before jsonschema's
recursion could overflow, and whatever else goes wrong while validating (a
``$ref`` that resolves nowhere) is an error about that call, not an
exception.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Iterator
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator, ValidationError

from ..messages.typed import schema_errors
from .regex import RegexError, compile_regex

#: How deep arguments may nest (objects and arrays): far more than any tool
#: needs, far less than would overflow the recursion of validation.
MAX_ARGUMENT_DEPTH = 64
_UNEVALUATED_WITH_PATTERNS = (
    "patternProperties cannot be combined with unevaluatedProperties: that keyword would match "
    "the patterns with a backtracking engine"
)
#: How much of an exception raised by a broken schema a call's error quotes.
_MAX_REASON = 500


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not compile_regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex = compile_regex(pattern)
        for key, value in instance.items():
            if regex.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    # jsonschema's own keyword, shown only the properties that no pattern of
    # patternProperties matches (it would match them with re).
    patterns = schema.get("patternProperties")
    if patterns and validator.is_type(instance, "object"):
        regexes = [compile_regex(p) for p in patterns]
        instance = {k: v for k, v in instance.items() if not any(r.search(k) for r in regexes)}
        schema = {k: v for k, v in schema.items() if k != "patternProperties"}
    yield from Draft202012Validator.VALIDATORS["additionalProperties"](
        validator, additional, instance, schema
    )


# (extend is unannotated in jsonschema's stubs)
ArgumentValidator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)
"""Draft 2020-12, with the regular expressions of schemas matched by RE2."""


#: How many distinct schemas ``schema_problems`` remembers the answer for.
PROBLEMS_CACHED = 256


def schema_problems(schema: dict[str, Any]) -> list[tuple[str, str]]:
    """Why ``schema`` cannot be a tool's parameters, as (where, why) pairs
    (where as ``['properties']['x']``, "" for the schema itself); nothing
    when it can. It must be a valid JSON Schema (the 2020-12 metaschema
    says), of type object, whose patterns RE2 can run.

    Checking a schema against the metaschema costs about half a
    millisecond, so the answer is remembered for the last
    ``PROBLEMS_CACHED`` distinct schemas, by their exact content (see
    ``_content_key``): tools made afresh for each agent from one schema
    are checked once. A schema holding anything but JSON values is checked
    every time."""
    key = _content_key(schema)
    if key is None:
        return _problems_of(schema)
    return list(_known_problems(key))


@functools.lru_cache(maxsize=PROBLEMS_CACHED)
def _known_problems(key: Hashable) -> tuple[tuple[str, str], ...]:
    # Checked on a copy rebuilt from the key: the caller's dict may change later.
    return tuple(_problems_of(_content(key)))


class _NotJSON(Exception):
    pass


def _content_key(value: Any) -> Hashable | None:
    """A hashable value equal for two JSON values exactly when they are the
    same: same types (``1``, ``1.0`` and ``True`` differ, as a list and a
    tuple do), same keys in the same order, floats bit for bit; None when
    ``value`` holds anything else, or nests too deeply to be walked."""
    try:
        return _key(value)
    except (_NotJSON, RecursionError):
        return None


def _key(value: Any) -> Hashable:
    kind = type(value)
    if kind is dict:
        items = []
        for name, item in value.items():
            if type(name) is not str:
                raise _NotJSON
            items.append((name, _key(item)))
        return (dict, tuple(items))
    if kind is list:
        return (list, tuple(_key(item) for item in value))
    if kind is float:
        return (float, value.hex())
    if kind in _SCALARS:
        return (kind, value)
    raise _NotJSON


def _content(key: Any) -> Any:
    """The JSON value ``_key`` made ``key`` of."""
    kind, value = key
    if kind is dict:
        return {name: _content(item) for name, item in value}
    if kind is list:
        return [_content(item) for item in value]
    if kind is float:
        return float.fromhex(value)
    return value


def _problems_of(schema: dict[str, Any]) -> list[tuple[str, str]]:
    if schema.get("type", "object") != "object":
        return [("", f"parameters must be a JSON Schema of type 'object', got type {schema['type']!r}")]
    try:
        Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        return [("".join(f"[{p!r}]" for p in e.absolute_path), f"invalid parameters schema: {e.message}")]
    except RecursionError:
        return [("", "invalid parameters schema: it nests too deeply to be checked")]
    problems = []
    unevaluated = any("unevaluatedProperties" in sub for _, sub in _subschemas(schema))
    for where, subschema in _subschemas(schema):
        for pattern in [subschema.get("pattern"), *subschema.get("patternProperties", {})]:
            if isinstance(pattern, str):
                try:
                    compile_regex(pattern)
                except RegexError as e:
                    problems.append((where, str(e)))
        if "patternProperties" in subschema and unevaluated:
            problems.append((where, _UNEVALUATED_WITH_PATTERNS))
    return problems


def argument_errors(validator: Any, args: Any) -> list[str]:
    """Why ``args`` do not fit the validator's schema, one line per failing
    field; ``[]`` when they fit. Never raises: arguments nested too deeply,
    and a schema that fails while validating (a ``$ref`` that resolves
    nowhere), are errors in the list."""
    try:
        if _plainly_valid(validator.schema, args):
            return []  # (flat: nothing in them nests)
        if (depth := _depth(args)) > MAX_ARGUMENT_DEPTH:
            return [f"the arguments nest {depth} levels deep; at most {MAX_ARGUMENT_DEPTH} are accepted"]
        return schema_errors(validator, args)
    except Exception as e:  # noqa: BLE001 - a flaw of the schema, found only now
        reason = f"{type(e).__name__}: {e}"
        if len(reason) > _MAX_REASON:
            reason = reason[:_MAX_REASON] + " [...]"
        return [f"the arguments could not be validated, the tool's schema is broken: {reason}"]


#: Keywords of a schema ``_plainly_valid`` reads (or may ignore).
_PLAIN_OBJECT = frozenset({"type", "properties", "required", "additionalProperties", "description", "title"})
_PLAIN_PROPERTY = frozenset({"type", "description", "title"})
#: Whether a value is certainly of a JSON Schema type, by its exact Python
#: type (a value these miss may still fit: jsonschema decides).
_PLAIN_TYPES = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


_ABSENT = object()
_SCALARS = frozenset((str, int, float, bool, type(None)))


def _plainly_valid(schema: Any, args: Any) -> bool:
    """True when ``args`` certainly fit ``schema``, decided by the types of
    their values alone: the schema of most tools (an object of properties
    with a plain type each) and well-formed arguments, whose values are all
    scalars (so they nest one level deep). False means "not certain":
    jsonschema decides, and words the errors. Read from the schema on every
    call, so a schema changed in place is never judged stale."""
    if type(args) is not dict or type(schema) is not dict or not schema.keys() <= _PLAIN_OBJECT:
        return False
    properties = schema.get("properties", {})
    additional = schema.get("additionalProperties", True)
    if (
        schema.get("type", "object") != "object"
        or type(properties) is not dict
        or type(additional) is not bool
    ):
        return False
    required = schema.get("required", ())
    if type(required) is not list and required != ():
        return False
    if not all(type(name) is str and name in args for name in required):
        return False
    for key, value in args.items():
        if type(value) not in _SCALARS:
            return False
        sub = properties.get(key, _ABSENT)
        if sub is _ABSENT:
            if additional:
                continue
            return False
        if type(sub) is not dict or not sub.keys() <= _PLAIN_PROPERTY:
            return False
        kind = sub.get("type")
        if kind is not None and not (
            type(kind) is str and kind in _PLAIN_TYPES and _PLAIN_TYPES[kind](value)
        ):
            return False
    return True


def _depth(value: Any) -> int:
    """How deep ``value`` nests, counted without recursion, and no further
    than one level past the limit."""
    deepest = 0
    todo = [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            if depth <= MAX_ARGUMENT_DEPTH:
                todo.extend((child, depth) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


# Keywords whose value is a schema, a map of names to schemas, or a list of schemas.
_SCHEMA = (
    "additionalProperties",
    "unevaluatedProperties",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
)
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


def _subschemas(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema inside ``schema`` (itself included), with where it is,
    walked without recursion and each visited once."""
    seen: set[int] = set()
    todo: list[tuple[str, Any]] = [("", schema)]
    while todo:
        where, current = todo.pop()
        if not isinstance(current, dict) or id(current) in seen:
            continue
        seen.add(id(current))
        yield where, current
        for keyword in _SCHEMA:
            todo.append((f"{where}[{keyword!r}]", current.get(keyword)))
        for keyword in _SCHEMA_MAPS:
            for name, sub in (current.get(keyword) or {}).items():
                todo.append((f"{where}[{keyword!r}][{name!r}]", sub))
        for keyword in _SCHEMA_LISTS:
            for index, sub in enumerate(current.get(keyword) or []):
                todo.append((f"{where}[{keyword!r}][{index}]", sub))
