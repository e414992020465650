"""The ``todo`` tool's lists reach an ACP client (the official SDK) as
``plan`` updates, live and when the session is loaded again."""

from __future__ import annotations

from pathlib import Path

from acp import text_block

from agentrio.messages import AssistantMessage, Text, ToolCall

from .acp_harness import FakeServerThread, RecordingClient, acp_args, drive, spawn_acp

FIRST = [
    {"content": "Read the code", "status": "in_progress", "priority": "high"},
    {"content": "Fix the bug", "status": "pending"},
]
SECOND = [
    {"content": "Read the code", "status": "completed", "priority": "high"},
    {"content": "Fix the bug", "status": "in_progress"},
]
#: Two items in progress: refused, so it is no plan.
REFUSED = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]


def entries(update) -> list[tuple[str, str, str]]:
    return [(e.content, e.status, e.priority) for e in update.entries]


def test_todo_calls_become_plan_updates_live_and_on_load(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    replies = [
        AssistantMessage([Text("Planning."), ToolCall("t1", "todo", {"todos": FIRST})]),
        AssistantMessage([ToolCall("t2", "todo", {"todos": REFUSED})]),
        AssistantMessage([ToolCall("t3", "todo", {"todos": SECOND})]),
        AssistantMessage([Text("On it.")]),
    ]
    expected = [
        [("Read the code", "in_progress", "high"), ("Fix the bug", "pending", "medium")],
        [("Read the code", "completed", "high"), ("Fix the bug", "in_progress", "medium")],
    ]

    async def main(fake: FakeServerThread) -> None:
        live = RecordingClient()
        async with spawn_acp(live, *acp_args(fake, tmp_path), stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            response = await conn.prompt(session_id=session_id, prompt=[text_block("fix it")])
            assert response.stop_reason == "end_turn"
        # Each accepted list is one plan update, right after its call completed.
        assert [entries(u) for u in live.of_kind("plan")] == expected
        assert live.statuses("t2") == ["pending", "in_progress", "failed"]
        shown = [(u.session_update, getattr(u, "tool_call_id", None)) for u in live.updates]
        assert shown.index(("plan", None)) == shown.index(("tool_call_update", "t1")) + 2
        assert live.of_kind("tool_call")[0].kind == "think"
        # A new process loads the session: the same plans, in the same places.
        again = RecordingClient()
        async with spawn_acp(again, *acp_args(fake, tmp_path), stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        assert [entries(u) for u in again.of_kind("plan")] == expected
        replayed = [u.session_update for u in again.updates if u.session_update != "session_info_update"]
        assert replayed[replayed.index("plan") - 1] == "tool_call_update"

    drive(replies, main)
