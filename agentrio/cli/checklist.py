"""The ``todo`` tool's plan as a checklist in a terminal transcript.

``run`` and ``chat`` print the whole checklist each time the model changes
its plan (in place of the tool's one-line confirmation), and ``chat`` prints
the plan a restored session ends with. The lines are plain text with a rich
style each; the view prints them as it prints any text from the model.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..events import Event, ToolExecutionEnd
from ..messages import ToolResultMessage
from ..tools.todo import TODO, TodoItem, summary, todo_items

#: Each status's mark and style.
MARKS = {
    "completed": ("✔", "dim green"),
    "in_progress": ("▶", "bold yellow"),
    "pending": ("○", ""),
}


def plan_of(event: Event) -> list[TodoItem] | None:
    """The plan a ``tool_execution_end`` of an accepted ``todo`` call set;
    None for any other event."""
    if not isinstance(event, ToolExecutionEnd) or event.tool_name != TODO or event.is_error:
        return None
    result = event.result
    details = result.details if isinstance(result, ToolResultMessage) else None
    return todo_items(details) if isinstance(details, dict) else None


def checklist(items: Sequence[TodoItem]) -> list[tuple[str, str]]:
    """The lines that show ``items``, as (text, style): a heading with the
    counts, then one line an item, its mark by status, ``!`` after a high
    priority item."""
    lines = [(f"  ☰ plan · {summary(items)}", "dim")]
    for item in items:
        mark, style = MARKS[item.status]
        urgent = " !" if item.priority == "high" and item.status != "completed" else ""
        lines.append((f"  {mark} {item.content}{urgent}", style))
    return lines
