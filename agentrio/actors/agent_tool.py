"""Agents as tools: each call runs a child agent on a task."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from ..events import ChildEvent, Event
from ..tools import Tool, ToolContext, ToolResult
from .agent import Agent, Setup
from .spec import AgentSpec


def _forwarder(parent: Agent, child: Agent) -> Callable[[Event], None]:
    """Re-emit a child's events on its parent's stream as they happen,
    wrapped with the path from the parent down to the agent that emitted
    them."""

    def forward(event: Event) -> None:
        path, names = [child.id], [child.spec.name]
        if isinstance(event, ChildEvent):
            path, names, event = path + event.path, names + event.names, event.event
        parent._bus.emit(ChildEvent, child_id=child.id, path=path, names=names, event=event)

    return forward


def agent_tool(spec: AgentSpec, *, name: str, description: str, setup: Setup | None = None) -> Tool:
    """A tool whose every call runs a new child agent of ``spec`` on the
    call's ``task`` and returns the child's final text.

    The child is registered under the calling agent, its events are
    forwarded on the caller's stream as ``child_event``, its usage counts in
    the caller's run, and it is disposed when the call ends. Cancelling the
    caller cancels the child (cause ``parent``); a child that fails or stops
    early is an ``is_error`` result, never a crash of the caller.
    """
    parameters = {
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

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        parent = ctx.agent
        if parent is None:
            raise RuntimeError(f"{name} runs sub-agents and needs to be called by an agent")
        runtime = parent.runtime
        try:
            child = await runtime.create(spec, parent=parent, setup=setup)
        except Exception as exc:
            return ToolResult(f"the sub-agent could not start: {type(exc).__name__}: {exc}", is_error=True)
        result = None
        child._bus.listen(_forwarder(parent, child))  # until the child is disposed
        try:
            result = await child.run(args["task"])
        finally:
            with trio.CancelScope(shield=True):
                if result is None:  # the caller was cancelled or timed out
                    await child.cancel("parent")
                await runtime.dispose(child)
        ctx.add_usage(result.usage)
        details = {"agent_id": child.id, "turns": result.turns, "stop_reason": result.stop_reason}
        if result.stop_reason == "completed":
            return ToolResult(result.text, details=details)
        why = f": {result.error}" if result.error else ""
        last = f" Its last message: {result.text}" if result.text else ""
        return ToolResult(
            f"the sub-agent stopped early ({result.stop_reason}{why}).{last}", is_error=True, details=details
        )

    return Tool(name, description, parameters, execute)
