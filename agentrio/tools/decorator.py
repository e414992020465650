"""``@tool``: a ``Tool`` from an async function's signature and docstring."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable
from typing import Any

from ..messages import TOOL_INPUT_INVALID
from ..messages.schema import SchemaBuilder, json_default, parse_docstring
from ..messages.typed import InvalidValue, convert, dump
from .tool import ExecutionMode, Tool, ToolContext, ToolOutput, ToolResult, is_content

__all__ = ["as_json_result", "parse_docstring", "tool"]


def _is_context(name: str, hint: Any) -> bool:
    return hint is ToolContext or (name == "ctx" and hint is inspect.Parameter.empty)


def _build(fn: Callable[..., Any], name: str | None, description: str | None, mode: Any) -> Tool:
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"@tool needs an async function, got {fn!r}")
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except NameError as exc:
        raise TypeError(f"@tool {fn.__name__}: cannot resolve its type hints: {exc}") from None
    summary, docs = parse_docstring(fn.__doc__)
    builder = SchemaBuilder()
    properties: dict[str, Any] = {}
    required: list[str] = []
    typed: dict[str, Any] = {}
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
        try:
            schema = builder.schema(hint)
        except TypeError as exc:
            raise TypeError(f"@tool {fn.__name__}: parameter {param.name!r}: {exc}") from None
        if param.name in docs and "description" not in schema:
            schema["description"] = docs[param.name]
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        elif param.default is not None and (shown := json_default(param.default))[0]:
            schema["default"] = shown[1]
        properties[param.name] = schema
        typed[param.name] = hint

    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        parameters["required"] = required
    parameters = builder.document(parameters)

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        kwargs: dict[str, Any] = {}
        errors: list[str] = []
        for key, value in args.items():
            try:
                kwargs[key] = convert(value, typed[key], path=key) if key in typed else value
            except InvalidValue as invalid:
                errors += invalid.errors
        if errors:
            return ToolResult(
                "invalid arguments: " + "; ".join(errors), is_error=True, error_code=TOOL_INPUT_INVALID
            )
        if context_param is not None:
            kwargs[context_param] = ctx
        return as_json_result(await fn(**kwargs))

    return Tool(
        name or fn.__name__,
        description if description is not None else summary,
        parameters,
        execute,
        execution_mode=mode,
    )


def as_json_result(value: Any) -> ToolOutput:
    """What a decorated tool returned, as the model will read it: a
    ``ToolResult``, a string, an image or document, or a list of parts
    holding one, as they are; any other value (a list of strings
    included) as JSON."""
    if isinstance(value, (ToolResult, str)):
        return value
    if is_content(value) and not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
        return value
    return json.dumps(dump(value), ensure_ascii=False)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    execution_mode: ExecutionMode | Callable[[dict[str, Any]], ExecutionMode] = "parallel",
) -> Any:
    """Make a ``Tool`` of an async function.

    The arguments' JSON Schema comes from the type hints (any type
    ``agentrio.messages.schema`` covers: scalars, ``Literal``, ``Enum``,
    unions, containers, dates, attrs classes, dataclasses, ``TypedDict``,
    pydantic models; ``Annotated[T, "description"]`` adds a description),
    the tool's description from the docstring up to its ``Args:`` section,
    and argument descriptions from that section (or from Sphinx ``:param
    x:`` lines). A parameter annotated ``ToolContext`` (or named ``ctx``)
    receives the call's context and is not part of the schema.

    The function receives converted values (an ``Enum`` member, a dataclass
    instance, a pydantic model, a ``datetime``); a conversion that fails
    (a malformed date) is an error result naming the field. It may return a
    ``ToolResult``, a string, or any value of those types, which the model
    reads as JSON.

    Use as ``@tool`` or ``@tool(name=..., execution_mode="exclusive")``.
    """
    if fn is not None:
        return _build(fn, name, description, execution_mode)
    return lambda f: _build(f, name, description, execution_mode)
