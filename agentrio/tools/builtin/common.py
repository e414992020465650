"""What every built-in tool shares: how expected failures reach the model,
and how argument schemas are written."""

from __future__ import annotations

import functools
from typing import Any

from ..tool import Execute, ToolContext, ToolOutput, ToolResult


class ToolInputError(Exception):
    """A call that cannot be carried out as asked (a missing file, a path
    outside the workspace, an ambiguous edit). Its message is what the model
    reads, so it says what was wrong and what to do instead."""


def reports_errors(execute: Execute) -> Execute:
    """Turn the failures a model can act on (``ToolInputError``, and OS
    errors such as a permission denied) into error results."""

    @functools.wraps(execute)
    async def wrapper(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            return await execute(args, ctx)
        except ToolInputError as e:
            return ToolResult(str(e), is_error=True)
        except OSError as e:
            where = f": {e.filename}" if e.filename else ""
            return ToolResult(f"{e.strerror or e}{where}", is_error=True)

    return wrapper


def object_schema(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


PATH_IN_WORKSPACE = "relative to the workspace root, or absolute inside it"
