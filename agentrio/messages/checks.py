"""Type checks run when a message or a part is created.

Every message is journaled and sent to a provider as JSON, so a value JSON
cannot carry back (an int among the parts, a set among the arguments, a NaN)
is refused where it is made, with a ``TypeError`` that names the field,
rather than found when a session can no longer be restored. The checks are
attrs validators; they test exact types (a subclass would not survive the
round trip either) and cost a few type lookups per field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, NoReturn

_JSON_SCALARS = (str, int, bool, type(None))
#: Deeper data is refused: Python's JSON encoder and decoder recurse, and
#: a journal or a request must never meet a ``RecursionError``.
MAX_JSON_DEPTH = 200


def _fail(instance: Any, attribute: Any, expected: str, got: str) -> NoReturn:
    raise TypeError(f"{type(instance).__name__}.{attribute.name}: expected {expected}, got {got}")


def _kind(value: Any) -> str:
    return "None" if value is None else f"a value of type {type(value).__name__}"


def is_str(instance: Any, attribute: Any, value: Any) -> None:
    if type(value) is not str:
        _fail(instance, attribute, "a str", _kind(value))


def is_optional_str(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and type(value) is not str:
        _fail(instance, attribute, "a str or None", _kind(value))


def is_bool(instance: Any, attribute: Any, value: Any) -> None:
    if type(value) is not bool:
        _fail(instance, attribute, "a bool", _kind(value))


def is_count(instance: Any, attribute: Any, value: Any) -> None:
    if type(value) is not int:
        _fail(instance, attribute, "an int", _kind(value))


def parts_of(*kinds: type, string: bool = False) -> Callable[[Any, Any, Any], None]:
    """A validator for a list of parts of ``kinds`` (or, with ``string``, a str)."""
    names = "/".join(k.__name__ for k in kinds)
    expected = f"a str or a list of {names} parts" if string else f"a list of {names} parts"

    def check(instance: Any, attribute: Any, value: Any) -> None:
        if type(value) is list:
            for i, part in enumerate(value):
                if type(part) not in kinds:
                    _fail(instance, attribute, expected, f"list item {i} of type {type(part).__name__}")
        elif not (string and type(value) is str):
            _fail(instance, attribute, expected, _kind(value))

    return check


def json_problem(value: Any) -> str | None:
    """Why ``value`` is not plain JSON data that reads back equal, or None.

    Iterative, so that data nested thousands deep is refused, not met with
    a ``RecursionError``. A path is spelled out only for the error.
    """
    if type(value) is dict and _flat(value):
        return None
    stack: list[tuple[Any, Any, int]] = [(value, None, 0)]  # (item, path, depth)
    while stack:
        item, path, depth = stack.pop()
        kind = type(item)
        if kind in _JSON_SCALARS:
            continue
        if kind is float:
            if not math.isfinite(item):
                return f"{item!r} at {_where(path)} (JSON has no NaN or infinity)"
            continue
        if depth == MAX_JSON_DEPTH:
            return f"data nested more than {MAX_JSON_DEPTH} deep"
        if kind is dict:
            for key, inner in item.items():
                if type(key) is not str:
                    return f"a key of type {type(key).__name__} at {_where(path)}"
                if type(inner) is not str:  # the common leaf, skipped here
                    stack.append((inner, (path, key), depth + 1))
        elif kind is list:
            stack.extend(
                (inner, (path, i), depth + 1) for i, inner in enumerate(item) if type(inner) is not str
            )
        else:
            return f"a value of type {kind.__name__} at {_where(path)}"
    return None


def _flat(data: dict[Any, Any]) -> bool:
    """Whether ``data`` has str keys and scalar values only: most tool
    arguments, checked without the general walk's stack."""
    for key, inner in data.items():
        if type(key) is not str or type(inner) not in _JSON_SCALARS:
            return False
    return True


def _where(path: Any) -> str:
    keys = []
    while path is not None:
        path, key = path
        keys.append(f"[{key!r}]")
    return "".join(reversed(keys)) or "the top"


def is_json_object(instance: Any, attribute: Any, value: Any) -> None:
    if type(value) is not dict:
        _fail(instance, attribute, "a dict of JSON data", _kind(value))
    if value and (problem := json_problem(value)) is not None:
        _fail(instance, attribute, "a dict of JSON data", problem)


def json_data(value: Any) -> Any:
    """``value`` as plain JSON data: itself when it already is, else what
    JSON makes of it (tuples become lists, keys strings), else its ``repr``.
    Never raises: for data meant for a log or a UI, losing the shape beats
    losing the record."""
    if value is None or json_problem(value) is None:
        return value
    try:
        data = json.loads(json.dumps(value, default=repr, allow_nan=False))
    except Exception:  # noqa: BLE001 -- a hostile __repr__ may raise anything
        data = None
    if data is not None and json_problem(data) is None:
        return data
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 -- the same
        return f"<a {type(value).__name__} that cannot be shown>"
