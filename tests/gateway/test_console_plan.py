"""The console in headless Chromium shows the agent's plan as a checklist,
kept current as the model changes it, and again after a reload."""

from __future__ import annotations

from pathlib import Path

from agentrio import AssistantMessage, Text, ToolCall, todo_tool

from .cdp import open_page
from .ws_harness import TOKEN, running_gateway

FIRST = [{"content": "Read the code", "status": "in_progress"}, {"content": "Fix it", "status": "pending"}]
SECOND = [
    {"content": "Read the code", "status": "completed"},
    {"content": "Fix it", "status": "in_progress", "priority": "high"},
]
ENTRIES = "[...document.querySelectorAll('#plan .entry')].map(e => [e.dataset.status, e.textContent])"


async def test_the_console_shows_the_plan_as_a_checklist_live_and_after_a_reload(tmp_path: Path):
    workspace = tmp_path / "work"
    workspace.mkdir()
    replies = [
        AssistantMessage([ToolCall("t1", "todo", {"todos": FIRST})]),
        AssistantMessage([ToolCall("t2", "todo", {"todos": SECOND})]),
        AssistantMessage([Text("Working on the fix.")]),
    ]
    async with running_gateway(workspace, replies, tools=[todo_tool()]) as gateway:
        url = f"http://127.0.0.1:{gateway.port}/?token={TOKEN}"
        async with open_page(url, tmp_path / "profile") as page:
            await page.wait_until("document.getElementById('connection')?.textContent === 'online'")
            assert await page.evaluate("document.getElementById('plan').textContent") == "No plan yet."
            await page.evaluate("document.getElementById('new-session').click()")
            await page.wait_until("!document.getElementById('send').disabled")
            await page.evaluate("""
                document.getElementById('prompt').value = 'Fix it';
                document.getElementById('composer').requestSubmit();
            """)
            await page.wait_until(
                "[...document.querySelectorAll('.message.assistant')]"
                ".some(m => m.textContent === 'Working on the fix.')"
            )
            expected = [["completed", "✔Read the code"], ["in_progress", "▶Fix it"]]
            assert await page.evaluate(ENTRIES) == expected
            assert await page.evaluate(
                "document.querySelector('#plan .entry.high .content').textContent"
            ) == ("Fix it")
            await page.evaluate("window.beforeReload = true")
            await page.reload()
            await page.wait_until("!window.beforeReload && document.querySelectorAll('#plan .entry').length")
            assert await page.evaluate(ENTRIES) == expected
            # Another session has no plan of its own.
            await page.evaluate("document.getElementById('new-session').click()")
            await page.wait_until("document.getElementById('plan').textContent === 'No plan yet.'")
