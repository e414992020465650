"""The ``todo`` tool's plan as a checklist in ``run`` and ``chat``."""

from __future__ import annotations

from agentrio.messages import AssistantMessage, Text, ToolCall

PLAN = [
    {"content": "Read the code", "status": "completed"},
    {"content": "Fix the bug", "status": "in_progress", "priority": "high"},
    {"content": "Run the tests", "status": "pending"},
]


async def checklist(term) -> None:
    """The plan's lines, in order (the live region may come between them)."""
    await term.expect_text("☰ plan · 3 items: 1 completed, 1 in progress, 1 pending")
    for line in ("✔ Read the code", "▶ Fix the bug !", "○ Run the tests"):
        await term.expect_text(line)


async def test_run_shows_each_plan_as_a_checklist_and_chat_shows_it_again_on_resume(cli):
    cli.server.add(
        AssistantMessage([Text("Planning."), ToolCall("t1", "todo", {"todos": PLAN})]),
        AssistantMessage([Text("Planned.")]),
    )
    term = cli.spawn("run", "Plan the fix.", "--session", "plan")
    await term.expect_text("✓ todo (the plan)")
    await checklist(term)
    await term.expect_text("Planned.")
    assert "Plan updated" not in term.text  # the checklist stands for the confirmation
    assert await term.wait() == 0

    term = cli.spawn("chat", "--resume", "plan")
    await term.expect_text("agentrio chat · session plan")
    await checklist(term)
    term.type_line("/quit")
    assert await term.wait() == 0
