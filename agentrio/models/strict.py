"""OpenAI's strict variant of a JSON Schema, where one exists.

With ``strict: true`` OpenAI constrains decoding to the schema, but accepts
only a subset of JSON Schema: every object closed (``additionalProperties:
false``) with every property required, every node typed, and a short list
of keywords. ``openai_strict`` rewrites a schema into that subset only when
nothing is lost: the strict schema accepts a subset of what the original
accepts, so whatever a strict model writes still passes our own validation
against the original, and nothing is tightened that the author left open.
Every object must already be closed (the schemas of typed tools and typed
output are; a pydantic model is when its config forbids extra fields). An
optional property becomes required only if it already accepts ``null``
(``x: int | None = None``). A free-form map, an open object, an optional
property without ``null``, ``{}`` (any value), a tuple or an unsupported
constraint leaves the schema non-strict (``None``), and the provider gets
it as it is, with ``strict: false``.
"""

from __future__ import annotations

from typing import Any

#: Keywords strict mode accepts, beside the structural ones handled below.
_KEPT = {
    "type",
    "description",
    "title",
    "enum",
    "const",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "$ref",
}
#: The formats strict mode knows. Others are dropped: our own validation does
#: not check formats either (conversion does), so nothing is lost.
_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
#: Annotations with no effect on what is valid: dropped.
_DROPPED = {"default", "examples", "$schema", "$id", "$comment", "readOnly", "writeOnly", "deprecated"}
_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


class _NotStrict(Exception):
    pass


def openai_strict(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The strict variant of an object ``schema``, or ``None`` if it has none."""
    if schema.get("type") != "object":
        return None
    try:
        return _node(schema, schema.get("$defs", {}), root=True)
    except _NotStrict:
        return None


def accepts_null(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if None in schema.get("enum", ()) or ("const" in schema and schema["const"] is None):
        return True
    return any(accepts_null(s) for s in schema.get("anyOf", ()))


def _node(schema: Any, defs: dict[str, Any], root: bool = False) -> dict[str, Any]:
    if not isinstance(schema, dict):
        raise _NotStrict
    if "$ref" in schema and len(schema) > 1:
        schema = _inline_ref(schema, defs)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED or (key == "format" and value not in _FORMATS):
            continue
        if key == "$defs" and root:
            out[key] = {name: _node(d, defs) for name, d in value.items()}
        elif key == "anyOf":
            out[key] = [_node(s, defs) for s in value]
        elif key == "items":
            out[key] = _node(value, defs)
        elif key == "properties":
            out[key] = {name: _node(s, defs) for name, s in value.items()}
        elif key in _KEPT or (key in ("required", "additionalProperties") and schema.get("type") == "object"):
            out[key] = value
        else:
            raise _NotStrict
    if "enum" in out and "type" not in out:
        out["type"] = _enum_type(out["enum"])
    if "type" not in out and not ({"anyOf", "$ref"} & out.keys()):
        raise _NotStrict  # any value: strict mode cannot say it
    if out.get("type") == "object":
        _close(schema, out)
    return out


def _inline_ref(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A ``$ref`` may have no sibling in strict mode (pydantic gives one a
    ``description``): the definition is written in its place."""
    prefix = "#/$defs/"
    ref = schema["$ref"]
    if not isinstance(ref, str) or not ref.startswith(prefix) or ref[len(prefix) :] not in defs:
        raise _NotStrict
    siblings = {k: v for k, v in schema.items() if k != "$ref"}
    return {**defs[ref[len(prefix) :]], **siblings}


def _enum_type(values: list[Any]) -> str | list[str]:
    kinds = sorted({_JSON_TYPES.get(type(v), "?") for v in values})
    if "?" in kinds:
        raise _NotStrict
    if kinds == ["integer", "number"]:
        kinds = ["number"]
    return kinds[0] if len(kinds) == 1 else kinds


def _close(schema: dict[str, Any], out: dict[str, Any]) -> None:
    """Every property required, no other property allowed."""
    properties = out.get("properties")
    if not properties or schema.get("additionalProperties") is not False:
        raise _NotStrict  # a map, an object of unknown shape, or one left open
    required = list(schema.get("required", ()))
    for name, property_schema in schema["properties"].items():
        if name not in required:
            if not accepts_null(property_schema):
                raise _NotStrict  # omitting it would mean its default; strict cannot omit
            required.append(name)
    out["required"] = required
    out["additionalProperties"] = False
