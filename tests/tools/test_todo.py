"""The ``todo`` planning tool: validation, confirmation, and the plan a
restored session still has."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrio import AgentSpec, Runtime, ScriptedModel, SQLiteStore, TodoItem, current_todos, todo_tool
from agentrio.messages import AssistantMessage, Text, ToolCall

PLAN = [
    {"content": "Read  the\ncode", "status": "completed", "priority": "high"},
    {"content": "Fix the bug", "status": "in_progress"},
    {"content": "Run the tests", "status": "pending", "priority": "low"},
]


async def test_a_list_is_confirmed_in_one_line_and_kept_in_details(call):
    result = await call(todo_tool(), todos=PLAN)
    assert not result.is_error
    assert result.content == "Plan updated (3 items: 1 completed, 1 in progress, 1 pending)."
    assert result.details["todos"][0] == {
        "content": "Read the code",
        "status": "completed",
        "priority": "high",
    }
    assert result.details["todos"][1]["priority"] == "medium"


@pytest.mark.parametrize(
    "todos",
    [
        [{"content": "x", "status": "done"}],
        [{"content": "", "status": "pending"}],
        [{"content": "x"}],
        [{"content": "x", "status": "pending", "priority": "urgent"}],
        [{"content": "x", "status": "pending", "owner": "me"}],
    ],
)
def test_the_schema_refuses_malformed_items(todos):
    assert todo_tool().argument_errors({"todos": todos})


async def test_blank_items_and_two_in_progress_are_refused_with_what_to_do(call):
    blank = await call(todo_tool(), todos=[{"content": "   ", "status": "pending"}])
    assert blank.is_error and "content" in blank.content
    two = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    refused = await call(todo_tool(), todos=two)
    assert refused.is_error and "at most one item in_progress" in refused.content


async def test_an_empty_list_clears_the_plan(call):
    assert (await call(todo_tool(), todos=[])).content == "Plan updated (the plan is empty)."


async def test_a_restored_session_has_the_plan_of_its_latest_accepted_call(tmp_path: Path):
    two = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    model = ScriptedModel(
        [
            AssistantMessage([ToolCall("t1", "todo", {"todos": PLAN[:1]})]),
            AssistantMessage([ToolCall("t2", "todo", {"todos": PLAN})]),
            AssistantMessage([ToolCall("t3", "todo", {"todos": two})]),  # refused: not the plan
            AssistantMessage([Text("Planned.")]),
        ]
    )
    spec = AgentSpec("a", model, tools=[todo_tool()])
    async with Runtime(SQLiteStore(tmp_path / "s.db")) as rt:
        agent = await rt.create(spec, session_id="s")
        assert current_todos(agent.messages) is None
        await agent.run("plan it")
    async with Runtime(SQLiteStore(tmp_path / "s.db")) as rt:
        restored = await rt.create(AgentSpec("a", ScriptedModel([]), tools=[todo_tool()]), session_id="s")
        assert current_todos(restored.messages) == [
            TodoItem("Read the code", "completed", "high"),
            TodoItem("Fix the bug", "in_progress"),
            TodoItem("Run the tests", "pending", "low"),
        ]
