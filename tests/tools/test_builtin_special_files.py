"""The file tools act on regular files only: a FIFO, a device or a socket is
refused with a clear error, never opened in a way that waits forever."""

import os
import shutil
import socket
from contextlib import asynccontextmanager

import pytest
import trio

from agentrio import AgentSpec, Runtime, ScriptedModel, ToolResultMessage
from agentrio.messages import ToolCall
from agentrio.tools.builtin import coding_tools, edit, grep, ls, read, write
from agentrio.tools.permissions import summarize_call
from tests.helpers import calls, say

#: How long a tool may take before the test unjams the FIFO it waits on.
PATIENCE = 10


@asynccontextmanager
async def unjammed(fifo):
    """Run the body; if something is still blocked opening or reading
    ``fifo`` after ``PATIENCE`` seconds, open its other end (so the test
    fails instead of hanging) and record that it had to."""
    jams = []

    async def unjam():
        await trio.sleep(PATIENCE)
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return  # no reader is waiting
        jams.append(fifo)
        os.close(fd)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(unjam)
        yield jams
        nursery.cancel_scope.cancel()


@pytest.fixture
def fifo(workspace):
    path = workspace / "pipe"
    os.mkfifo(path)
    return path


async def test_read_refuses_a_fifo(workspace, fifo, call):
    async with unjammed(fifo) as jams:
        result = await call(read(workspace), path="pipe")
    assert jams == []
    assert result.is_error and "pipe is a FIFO (named pipe), not a regular file" in result.content


async def test_edit_refuses_a_fifo(workspace, fifo, call):
    async with unjammed(fifo) as jams:
        result = await call(edit(workspace), path="pipe", old_string="a", new_string="b")
    assert jams == []
    assert result.is_error and "pipe is a FIFO" in result.content


async def test_write_refuses_to_replace_a_fifo(workspace, fifo, call):
    result = await call(write(workspace), path="pipe", content="data")
    assert result.is_error and "pipe is a FIFO" in result.content
    assert os.path.exists(fifo) and not os.path.isfile(fifo)  # still the FIFO


async def test_ls_says_what_a_fifo_is(workspace, fifo, call):
    result = await call(ls(workspace), path="pipe")
    assert result.is_error and "pipe is a FIFO (named pipe), not a regular file" in result.content


async def test_grep_refuses_a_fifo_given_as_its_path(workspace, fifo, call):
    async with unjammed(fifo) as jams:
        result = await call(grep(workspace, ripgrep=False), pattern="x", path="pipe")
    assert jams == []
    assert result.is_error and "pipe is a FIFO" in result.content


@pytest.mark.parametrize(
    "ripgrep",
    [
        pytest.param(
            True, marks=pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep (rg) is not on PATH")
        ),
        False,
    ],
    ids=["ripgrep", "python"],
)
async def test_grep_skips_a_fifo_in_a_folder(workspace, fifo, call, ripgrep):
    (workspace / "notes.txt").write_text("x marks the spot\n")
    async with unjammed(fifo) as jams:
        result = await call(grep(workspace, ripgrep=ripgrep), pattern="x marks")
    assert jams == []
    assert result.content == "notes.txt:1:x marks the spot"


async def test_read_refuses_a_socket(workspace, call):
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(workspace / "sock"))
        result = await call(read(workspace), path="sock")
    assert result.is_error and "sock is a socket, not a regular file" in result.content


@pytest.mark.parametrize("tool", [write, edit])
async def test_the_approval_preview_of_a_change_to_a_fifo_does_not_wait(workspace, fifo, tool):
    arguments = {"path": "pipe", "content": "x", "old_string": "a", "new_string": "b"}
    made = tool(workspace)
    arguments = {k: v for k, v in arguments.items() if k in made.parameters["properties"]}
    async with unjammed(fifo) as jams:
        summary = await summarize_call(ToolCall("call-1", made.name, arguments), made)
    assert jams == []
    assert "pipe is a FIFO" in summary


async def test_an_agent_reading_a_fifo_ends_its_run_and_the_runtime_exits(workspace, fifo):
    model = ScriptedModel([calls(("read", {"path": "pipe"})), say("done")])
    async with unjammed(fifo) as jams, Runtime() as rt:
        agent = await rt.create(AgentSpec("a", model, tools=coding_tools(workspace)))
        result = await agent.run("read the pipe")
    assert jams == []
    assert result.stop_reason == "completed"
    (tool_result,) = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert tool_result.is_error and "FIFO" in tool_result.text
