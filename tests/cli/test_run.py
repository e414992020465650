"""``agentrio run``: a prompt, a streamed transcript, an exit code."""

from __future__ import annotations

import json

from agentrio.messages import AssistantMessage, Text, ToolCall, Usage

from ..fake_openai import FakeRequest


async def test_run_streams_text_and_tool_calls_and_exits_0_when_completed(cli):
    (cli.workspace / "notes.txt").write_text("first line\nsecond line\n")
    cli.server.add(
        AssistantMessage([Text("Let me read the notes."), ToolCall("c1", "read", {"path": "notes.txt"})],
                         usage=Usage(120, 15)),
        AssistantMessage([Text("The notes have two lines.\nThat is all.")], usage=Usage(200, 9)),
    )
    term = cli.spawn("run", "What is in notes.txt?")
    await term.expect_text("Let me read the notes.")
    await term.expect(r"✓ read notes.txt")
    await term.expect(r"│ +1\s+first line")
    await term.expect_text("The notes have two lines.")
    await term.expect_text("That is all.")
    await term.expect(r"■ completed · 1 turn · 320 tokens in, 24 out")
    assert await term.wait() == 0
    # The tool's result went back to the model, after its call.
    last = cli.server.requests[1].body["messages"]
    assert [m["role"] for m in last[-3:]] == ["user", "assistant", "tool"]
    assert "second line" in last[-1]["content"]
