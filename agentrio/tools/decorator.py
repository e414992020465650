"""``@tool``: a ``Tool`` from an async function's signature and docstring."""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union

from .tool import ExecutionMode, Tool, ToolContext

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    Any: {},
}


def type_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema of a Python type hint."""
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        schema = type_schema(args[0])
        descriptions = [a for a in args[1:] if isinstance(a, str)]
        if descriptions:
            schema["description"] = descriptions[0]
        return schema
    if origin in (Union, types.UnionType):
        return {"anyOf": [type_schema(a) for a in args]}
    if origin is Literal:
        return {"enum": list(args)}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [m.value for m in hint]}
    if hint in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        schema: dict[str, Any] = {"type": "array"}
        if args and args[-1] is not Ellipsis:
            schema["items"] = type_schema(args[0])
        return schema
    if hint is dict or origin is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = type_schema(args[1])
        return schema
    raise TypeError(f"no JSON Schema for the type {hint!r}")


_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX = re.compile(r"^\s*:param\s+(?:\S+\s+)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description and the per-argument descriptions of a docstring
    (Google style ``Args:`` sections and Sphinx ``:param x:`` lines)."""
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


def _is_context(name: str, hint: Any) -> bool:
    return hint is ToolContext or (name == "ctx" and hint is inspect.Parameter.empty)


def _build(fn: Callable[..., Any], name: str | None, description: str | None, mode: Any) -> Tool:
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"@tool needs an async function, got {fn!r}")
    hints = typing.get_type_hints(fn, include_extras=True)
    summary, docs = parse_docstring(fn.__doc__)
    properties: dict[str, Any] = {}
    required: list[str] = []
    context_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        hint = hints.get(param.name, inspect.Parameter.empty)
        if _is_context(param.name, hint):
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"@tool {fn.__name__}: *args and **kwargs have no JSON Schema")
        if hint is inspect.Parameter.empty:
            raise TypeError(f"@tool {fn.__name__}: parameter {param.name!r} needs a type hint")
        schema = type_schema(hint)
        if param.name in docs and "description" not in schema:
            schema["description"] = docs[param.name]
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        elif param.default is not None:
            schema["default"] = param.default
        properties[param.name] = schema

    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        parameters["required"] = required

    async def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        if context_param is not None:
            return await fn(**args, **{context_param: ctx})
        return await fn(**args)

    return Tool(
        name or fn.__name__,
        description if description is not None else summary,
        parameters,
        execute,
        execution_mode=mode,
    )


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    execution_mode: ExecutionMode | Callable[[dict[str, Any]], ExecutionMode] = "parallel",
) -> Any:
    """Make a ``Tool`` of an async function.

    The arguments' JSON Schema comes from the type hints (``Annotated[T,
    "description"]`` adds a description), the tool's description from the
    docstring up to its ``Args:`` section, and argument descriptions from
    that section (or from Sphinx ``:param x:`` lines). A parameter annotated ``ToolContext`` (or named ``ctx``) receives
    the call's context and is not part of the schema.

    Use as ``@tool`` or ``@tool(name=..., execution_mode="exclusive")``.
    """
    if fn is not None:
        return _build(fn, name, description, execution_mode)
    return lambda f: _build(f, name, description, execution_mode)
