"""The ``todo`` tool's lists as ACP ``plan`` updates.

A ``plan`` update holds the whole plan (ACP clients replace the one they
show), so each ``todo`` call that succeeded becomes one, live and when a
session's history is replayed. Only a session's own agent speaks for its
plan: a child agent's ``todo`` calls are shown as calls, not as the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...messages import ToolCall, ToolResultMessage
from ...tools.todo import TODO, TodoItem, todo_items


def plan_update(items: Sequence[TodoItem]) -> dict[str, Any]:
    """``items`` as a ``plan`` session update (entries with content, priority, status)."""
    entries = [{"content": i.content, "priority": i.priority, "status": i.status} for i in items]
    return {"sessionUpdate": "plan", "entries": entries}


def plan_updates(call: ToolCall | None, result: ToolResultMessage) -> list[dict[str, Any]]:
    """The ``plan`` update a call's result makes: one for a ``todo`` call
    that succeeded, none for anything else."""
    if call is None or result.tool_name != TODO or result.is_error:
        return []
    items = todo_items(call.arguments)
    return [] if items is None else [plan_update(items)]
