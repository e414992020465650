from pathlib import Path
from typing import Any

import pytest

from agentrio.tools import Tool, ToolContext, ToolResult
from agentrio.tools.tool import tool_result


@pytest.fixture
def reports() -> list[Any]:
    """The progress values reported through ``ctx``, in order."""
    return []


@pytest.fixture
def ctx(reports: list[Any]) -> ToolContext:
    return ToolContext(
        agent_id="agent-1",
        session_id="session-1",
        tool_call_id="call-1",
        tool_name="tool",
        report=reports.append,
    )


@pytest.fixture
def call(ctx: ToolContext):
    """``await call(tool, **args)``: the tool's result for arguments that
    its schema accepts."""

    async def call(tool: Tool, **args: Any) -> ToolResult:
        assert tool.argument_errors(args) == []
        result = await tool.execute(args, ctx)
        return tool_result(result)

    return call


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace root, beside a folder outside it that links lead to."""
    root = tmp_path / "workspace"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (root / "link-out").symlink_to(outside)
    (root / "secret-link.txt").symlink_to(outside / "secret.txt")
    return root
