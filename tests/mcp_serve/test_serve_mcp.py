"""Agents offered as an MCP server, driven by the official SDK's client:
over stdio (``agentrio mcp`` in a subprocess) and over streamable HTTP
(``serve_mcp(..., http=0)`` in this process)."""

import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import mcp.types as mcp_types
import pytest
import trio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from agentrio import serve_mcp
from agentrio.gateway.mcp_serve import NO_ELICITATION, SESSION_META
from tests.mcp_serve.agents import AGENTS

ROOT = Path(__file__).parents[2]


def texts(result: mcp_types.CallToolResult) -> list[str]:
    return [block.text for block in result.content]


@asynccontextmanager
async def over_stdio(nap_log: Path, **callbacks):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentrio", "mcp", "--spec", "tests.mcp_serve.agents:AGENTS"],
        env={"PYTHONPATH": str(ROOT), "NAP_LOG": str(nap_log), "PATH": os.environ["PATH"]},
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write, **callbacks) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def over_http(**callbacks):
    async with trio.open_nursery() as nursery:
        port = await nursery.start(lambda task_status: serve_mcp(AGENTS, http=0, task_status=task_status))
        async with (
            streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
            ClientSession(read, write, **callbacks) as session,
        ):
            await session.initialize()
            yield session
        nursery.cancel_scope.cancel()


async def approve_everything(context, params):
    approve_everything.asked.append(params.message)
    return mcp_types.ElicitResult(action="accept", content={"approve": True})


@pytest.fixture
def nap_log(tmp_path, monkeypatch):
    log = tmp_path / "naps.log"
    log.touch()
    monkeypatch.setenv("NAP_LOG", str(log))
    return log


async def wait_for_line(path: Path) -> list[str]:
    with trio.fail_after(10):
        while not (lines := path.read_text().splitlines()):
            await trio.sleep(0.02)
    return lines


async def test_over_stdio_each_agent_is_a_tool_that_answers_and_continues_its_session(nap_log):
    progress = []

    async def on_progress(value, total, message):
        progress.append((value, message))

    async with over_stdio(nap_log) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == ["forecaster", "parrot"]
        assert tools["parrot"].input_schema["required"] == ["prompt"]
        assert sorted(tools["parrot"].input_schema["properties"]) == ["prompt", "session"]
        assert tools["parrot"].output_schema is None
        assert tools["forecaster"].output_schema["required"] == ["city", "degrees"]

        first = await client.call_tool("parrot", {"prompt": "hello"}, progress_callback=on_progress)
        session = first.meta[SESSION_META]
        assert (first.is_error, texts(first)) == (False, ["hello #1", f"session: {session}"])
        again = await client.call_tool("parrot", {"prompt": "again", "session": session})
        assert texts(again)[0] == "again #2"  # the session's history was kept
        fresh = await client.call_tool("parrot", {"prompt": "anew"})
        assert texts(fresh)[0] == "anew #1" and fresh.meta[SESSION_META] != session

        await client.call_tool("parrot", {"prompt": 'tool nap {"seconds": 0}'}, progress_callback=on_progress)
        assert progress == [(1, "turn 1"), (1, "turn 1"), (2, "tool nap")]

        weather = await client.call_tool("forecaster", {"prompt": "Paris?"})
        assert weather.structured_content == {"city": "Paris", "degrees": 21}

        # This client cannot be asked: the call needing approval is refused,
        # and the model is told why.
        refused = await client.call_tool("parrot", {"prompt": 'tool note {"text": "x"}'})
        assert not refused.is_error
        assert texts(refused)[0].startswith("tool said: ") and NO_ELICITATION in texts(refused)[0]


async def test_over_stdio_a_client_cancel_cancels_the_run(nap_log):
    async with over_stdio(nap_log) as client:
        with trio.move_on_after(1.5):  # the nap has started by then
            await client.call_tool("parrot", {"prompt": 'tool nap {"seconds": 60}'})
            pytest.fail("the nap ended")
        assert await wait_for_line(nap_log) == ["nap cancelled"]
        after = await client.call_tool("parrot", {"prompt": "still there?"})
        assert texts(after)[0] == "still there? #1"


async def test_over_http_approvals_are_asked_through_elicitation():
    approve_everything.asked = []
    async with over_http(elicitation_callback=approve_everything) as client:
        noted = await client.call_tool("parrot", {"prompt": 'tool note {"text": "milk"}'})
        assert texts(noted)[0] == "tool said: noted milk"
    assert len(approve_everything.asked) == 1
    assert approve_everything.asked[0].startswith("The agent 'parrot' wants to run note")


async def test_over_http_a_client_cancel_cancels_the_run_and_frees_its_session(nap_log):
    started = trio.Event()

    async def on_progress(value, total, message):
        if message == "tool nap":
            started.set()

    async with over_http() as client:
        first = await client.call_tool("parrot", {"prompt": "hi"})
        session = first.meta[SESSION_META]
        with trio.move_on_after(10) as waited:
            async with trio.open_nursery() as nursery:

                async def nap():
                    await client.call_tool(
                        "parrot",
                        {"prompt": 'tool nap {"seconds": 60}', "session": session},
                        progress_callback=on_progress,
                    )

                nursery.start_soon(nap)
                await started.wait()
                nursery.cancel_scope.cancel()
        assert not waited.cancelled_caught
        assert await wait_for_line(nap_log) == ["nap cancelled"]
        after = await client.call_tool("parrot", {"prompt": "next", "session": session})
        assert texts(after)[0] == "next #3"


async def test_over_http_a_session_runs_one_call_at_a_time():
    started = trio.Event()

    async def on_progress(value, total, message):
        if message == "tool nap":
            started.set()

    async with over_http() as client:
        session = (await client.call_tool("parrot", {"prompt": "hi"})).meta[SESSION_META]
        async with trio.open_nursery() as nursery:

            async def nap():
                nap_call = {"prompt": 'tool nap {"seconds": 0.5}', "session": session}
                napped = await client.call_tool("parrot", nap_call, progress_callback=on_progress)
                assert texts(napped)[0] == "tool said: rested"

            nursery.start_soon(nap)
            await started.wait()
            busy = await client.call_tool("parrot", {"prompt": "me too", "session": session})
        assert busy.is_error
        assert texts(busy) == [
            f"session {session!r} cannot be opened now: session {session!r} is already open in this runtime"
        ]
        assert texts(await client.call_tool("parrot", {"prompt": "now", "session": session}))[0] == "now #3"


async def test_over_http_a_declined_approval_refuses_the_call_and_the_model_is_told():
    async def decline(context, params):
        return mcp_types.ElicitResult(action="decline")

    async with over_http(elicitation_callback=decline) as client:
        refused = await client.call_tool("parrot", {"prompt": 'tool note {"text": "milk"}'})
        assert (
            texts(refused)[0].startswith("tool said: ")
            and "refused by the person (decline)" in texts(refused)[0]
        )


async def test_over_http_bad_arguments_and_unknown_agents_are_errors_not_runs():
    async with over_http() as client:
        bad = await client.call_tool("parrot", {"prompt": 42})
        assert bad.is_error
        assert texts(bad) == ["`prompt` must be a string, and `session`, when given, a string"]
        with pytest.raises(MCPError, match="no agent is called 'nobody'"):
            await client.call_tool("nobody", {"prompt": "hi"})
