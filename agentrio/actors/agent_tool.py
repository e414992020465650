"""Agents as tools: each call runs a child agent on a task."""

from __future__ import annotations

from typing import Any

from ..tools import Tool, ToolContext, ToolResult
from .agent import Setup
from .spec import AgentSpec

PARAMETERS = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "minLength": 1,
            "description": "The task for the sub-agent, with everything it needs to know: "
            "it sees nothing of this conversation.",
        }
    },
    "required": ["task"],
    "additionalProperties": False,
}


def agent_tool(spec: AgentSpec, *, name: str, description: str, setup: Setup | None = None) -> Tool:
    """A tool whose every call runs a new child agent of ``spec`` on the
    call's ``task`` and returns the child's final text.

    The child lives in the calling agent's supervision tree for the length of
    the call (``ToolContext.spawn_child``): its events are forwarded on the
    caller's stream as ``child_event``, its usage counts in the caller's run,
    and it is disposed when the call ends. Cancelling the caller cancels the
    child (cause ``parent``); a child that fails or stops early is an
    ``is_error`` result, never a crash of the caller.
    """

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            async with ctx.spawn_child(spec, setup=setup) as child:
                result = await child.run(args["task"])
        except Exception as exc:  # noqa: BLE001 - the child's failure is the tool's error result
            # run() itself never raises for a run that ended: this is the
            # child failing to start (its setup, say) or to be torn down.
            return ToolResult(f"the sub-agent could not start: {type(exc).__name__}: {exc}", is_error=True)
        ctx.add_usage(result.usage)
        details = {"agent_id": child.id, "turns": result.turns, "stop_reason": result.stop_reason}
        if result.stop_reason == "completed":
            return ToolResult(result.text, details=details)
        why = f": {result.error}" if result.error else ""
        last = f" Its last message: {result.text}" if result.text else ""
        return ToolResult(
            f"the sub-agent stopped early ({result.stop_reason}{why}).{last}", is_error=True, details=details
        )

    return Tool(name, description, PARAMETERS, execute)
