"""``todo``: the model's plan, as a checklist it keeps up to date.

The model sends the whole list each time (as Claude Code's TodoWrite): every
item with its ``content``, its ``status`` (``pending``, ``in_progress`` or
``completed``) and an optional ``priority`` (``high``, ``medium``, the
default, or ``low``). The tool keeps no state of its own: the current plan
is the arguments of the latest ``todo`` call that succeeded, which the
journal holds like any call, so a restored session has the same plan
(``current_todos``). A ``todo`` call only records a plan: it has no side
effects and runs in parallel with other calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal, cast

import attrs

from ..messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from .tool import Tool, ToolContext, ToolResult

TodoStatus = Literal["pending", "in_progress", "completed"]
TodoPriority = Literal["high", "medium", "low"]
STATUSES: tuple[TodoStatus, ...] = ("pending", "in_progress", "completed")
PRIORITIES: tuple[TodoPriority, ...] = ("high", "medium", "low")

#: The name of the tool ``todo_tool`` makes; what ``current_todos`` looks for.
TODO = "todo"
#: The most items one list holds, and the longest an item's text may be.
MAX_ITEMS = 100
MAX_CONTENT = 500

DESCRIPTION = """\
Keep a checklist of the steps of the current task, to plan multi-step work \
and show progress. Send the whole list every time (it replaces the previous \
one): each item's content (one short imperative sentence), status \
(pending, in_progress or completed) and optionally priority (high, medium, \
low). Mark an item in_progress when you start it and completed as soon as \
it is done; keep at most one item in_progress. Skip the list for a task of \
one or two trivial steps."""

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "maxItems": MAX_ITEMS,
            "description": "The whole checklist, in order.",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT},
                    "status": {"type": "string", "enum": list(STATUSES)},
                    "priority": {"type": "string", "enum": list(PRIORITIES), "default": "medium"},
                },
                "required": ["content", "status"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["todos"],
    "additionalProperties": False,
}


@attrs.frozen
class TodoItem:
    """One step of a plan."""

    content: str
    status: TodoStatus = attrs.field(validator=attrs.validators.in_(STATUSES))
    priority: TodoPriority = attrs.field(default="medium", validator=attrs.validators.in_(PRIORITIES))

    def to_dict(self) -> dict[str, str]:
        return {"content": self.content, "status": self.status, "priority": self.priority}


def todo_items(arguments: Any) -> list[TodoItem] | None:
    """The items of a ``todo`` call's arguments, or None when they are not a
    valid list (a call the tool refused, or a journal edited by hand)."""
    todos = arguments.get("todos") if isinstance(arguments, dict) else None
    if not isinstance(todos, list) or len(todos) > MAX_ITEMS:
        return None
    items = []
    for todo in todos:
        if not isinstance(todo, dict) or set(todo) - {"content", "status", "priority"}:
            return None
        content, status, priority = todo.get("content"), todo.get("status"), todo.get("priority", "medium")
        if not isinstance(content, str) or not content.strip() or len(content) > MAX_CONTENT:
            return None
        if status not in STATUSES or priority not in PRIORITIES:
            return None
        items.append(TodoItem(" ".join(content.split()), cast(TodoStatus, status), priority))
    return items


def summary(items: Sequence[TodoItem]) -> str:
    """A plan in a few words: ``3 items: 1 completed, 1 in progress, 1 pending``."""
    if not items:
        return "the plan is empty"
    counts = Counter(item.status for item in items)
    parts = [f"{counts[s]} {s.replace('_', ' ')}" for s in reversed(STATUSES) if counts[s]]
    return f"{len(items)} item{'s' * (len(items) != 1)}: {', '.join(parts)}"


async def _execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    items = todo_items(args)
    if items is None:
        return ToolResult("the list was not recorded: each item needs content and a status", is_error=True)
    if sum(item.status == "in_progress" for item in items) > 1:
        return ToolResult(
            "the list was not recorded: keep at most one item in_progress (mark the others pending or "
            "completed) and send the whole list again",
            is_error=True,
        )
    return ToolResult(f"Plan updated ({summary(items)}).", details={"todos": [i.to_dict() for i in items]})


def todo_tool() -> Tool:
    """The ``todo`` planning tool: the model records its checklist, the
    whole list each call, validated (a schema, non-blank items, at most
    one ``in_progress``); it answers with a one-line confirmation and
    keeps the list in ``ToolResult.details["todos"]``. Add it to an
    ``AgentSpec``'s tools to turn planning on; ACP clients see each list as
    a ``plan`` update and the CLI as a checklist."""
    return Tool(TODO, DESCRIPTION, PARAMETERS, _execute, execution_mode="parallel")


def current_todos(messages: Iterable[Message]) -> list[TodoItem] | None:
    """The plan a transcript ends with: the items of the latest ``todo``
    call whose result was not an error; None when it never made one."""
    calls: dict[str, ToolCall] = {}
    plan: list[TodoItem] | None = None
    for message in messages:
        if isinstance(message, AssistantMessage):
            calls.update((call.id, call) for call in message.tool_calls if call.name == TODO)
        elif isinstance(message, ToolResultMessage) and message.tool_name == TODO and not message.is_error:
            call = calls.get(message.tool_call_id)
            if call is not None and (items := todo_items(call.arguments)) is not None:
                plan = items
    return plan
