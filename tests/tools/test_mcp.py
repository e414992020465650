"""MCP tool servers over stdio, with real server processes: the time server
of the ``mcp-server-time`` package, and a server that crashes mid-call."""

import base64
import os
import sys
from pathlib import Path

import mcp.types as mcp_types
import pytest

from agentrio import AgentSpec, Image, Limits, ScriptedModel, Text
from agentrio.supervisors import ChildRestart, Escalation
from agentrio.tools.mcp import ServerDidNotStart, mcp_server, provider_names
from agentrio.tools.mcp_results import tool_result
from agentrio.tools.tool import TOOL_NAME
from tests.conftest import record
from tests.helpers import calls, say

CRASH_SERVER = [str(Path(__file__).with_name("mcp_crash_server.py"))]
TIME_SERVER = ["-m", "mcp_server_time", "--local-timezone", "UTC"]


def our_children() -> set[int]:
    """The processes whose parent is this test process."""
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # it exited while we looked
        if int(fields[1]) == os.getpid():
            children.add(int(stat.parent.name))
    return children


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def text(result) -> str:
    return result.to_message("call-1", "tool").text


def assert_gone(pids: set[int]) -> None:
    """Each process ended and was reaped: nothing is left of it."""
    assert pids
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists()] == []


async def test_the_time_server_tools_list_call_and_fail_as_results(call):
    before = our_children()
    async with mcp_server(sys.executable, TIME_SERVER, name="time") as server:
        servers = our_children() - before
        tools = server.tools_by_name()
        assert sorted(tools) == ["convert_time", "get_current_time"]
        get_time = tools["get_current_time"]
        assert get_time.description == "Get current time in a specific timezone"
        assert get_time.parameters["required"] == ["timezone"]
        assert get_time.execution_mode == "parallel"  # the server marks it read-only

        paris = await call(get_time, timezone="Europe/Paris")
        assert not paris.is_error
        assert '"timezone": "Europe/Paris"' in text(paris)
        assert paris.details["timezone"] == "Europe/Paris"

        nowhere = await call(get_time, timezone="Nowhere/Atlantis")
        assert nowhere.is_error
        assert "Invalid timezone" in text(nowhere)
    assert len(servers) == 1
    assert_gone(servers)


async def test_an_agent_holds_a_server_for_its_whole_life_through_its_scope(rt):
    before = our_children()

    async def setup(agent, scope):
        server = await scope.enter_async_context(mcp_server(sys.executable, TIME_SERVER, name="time"))
        agent.tools.update(server.tools_by_name())

    model = ScriptedModel([calls(("get_current_time", {"timezone": "Asia/Tokyo"})), say("done")])
    agent = await rt.create(AgentSpec("clock", model), setup=setup)
    servers = our_children() - before
    result = await agent.run("what time is it in Tokyo?")
    assert result.stop_reason == "completed"
    assert '"timezone": "Asia/Tokyo"' in result.new_messages[2].text
    assert len(servers) == 1 and all(Path(f"/proc/{pid}").exists() for pid in servers)
    await agent.dispose()  # the server goes with the agent
    assert_gone(servers)


async def test_a_server_that_dies_mid_call_is_restarted_and_the_agent_goes_on(rt):
    events = []
    before = our_children()
    async with mcp_server(sys.executable, CRASH_SERVER, name="crash", on_event=events.append) as server:
        assert {t.name: t.execution_mode for t in server.tools} == {
            "pid": "parallel",
            "crash": "exclusive",  # no annotations: it may change things
            "echo": "exclusive",  # not read-only, even if not destructive
            "count": "parallel",
            "files_read": "parallel",
            "fs_list": "parallel",
            "daemon": "exclusive",
        }
        model = ScriptedModel(
            [
                calls(("pid", {}), ("count", {"to": 2})),
                calls(("crash", {})),
                calls(("pid", {}), ("echo", {"text": "still here"})),
                say("done"),
            ]
        )
        agent = await rt.create(AgentSpec("a", model, tools=server.tools, limits=Limits(max_turns=5)))
        async with record(agent) as recorder:
            result = await agent.run("go")
        left_running = our_children() - before
        second_server = int([m for m in result.new_messages if m.role == "tool_result"][3].text)
        # The server runs under its supervising shim, our child.
        assert left_running == {parent_of(second_server)}
    assert result.stop_reason == "completed"
    first, counted, crashed, second, echoed = [m for m in result.new_messages if m.role == "tool_result"]
    assert counted.text == "counted"
    assert [e.progress for e in recorder.of("tool_execution_update")] == [
        {"progress": 1, "total": 2, "message": "1 of 2"},
        {"progress": 2, "total": 2, "message": "2 of 2"},
    ]
    assert crashed.is_error
    assert crashed.text == (
        "MCP server 'crash' exited during the call, so whether the call took effect is unknown; "
        "the server is restarted for later calls"
    )
    # The calls after the crash went to a new process.
    assert not second.is_error and second.text != first.text
    assert (echoed.is_error, echoed.text) == (False, "still here")
    assert_gone({int(first.text), int(second.text)})
    assert [(type(e), e.supervisor, e.child_id, e.error) for e in events] == [
        (ChildRestart, "mcp:crash", "crash", "ServerExited: MCP server 'crash' exited")
    ]


async def test_past_the_restart_limit_the_tools_answer_with_errors_and_the_owner_goes_on(call):
    events = []
    before = our_children()
    async with mcp_server(
        sys.executable,
        CRASH_SERVER,
        name="crash",
        max_restarts=0,
        on_event=events.append,
        prefix="crash_",
        execution_mode="exclusive",
    ) as server:
        servers = our_children() - before
        tools = server.tools_by_name()
        # The prefix names the tools apart; the mode applies to every one.
        assert sorted(tools) == [
            "crash_count",
            "crash_crash",
            "crash_daemon",
            "crash_echo",
            "crash_files_read",
            "crash_fs_list",
            "crash_pid",
        ]
        assert {t.execution_mode for t in server.tools} == {"exclusive"}

        assert (await call(tools["crash_crash"])).is_error
        given_up = await call(tools["crash_pid"])
        assert given_up.is_error
        assert text(given_up).startswith(
            "MCP server 'crash' is unavailable: supervisor 'mcp:crash' gave up: child 'crash' failed "
            "(ServerExited: MCP server 'crash' exited) after 0 restarts"
        )
    assert [type(e) for e in events] == [Escalation]
    assert_gone(servers)
    assert text(await call(tools["crash_pid"])).endswith("unavailable: the server was shut down")


async def test_names_providers_refuse_are_offered_mapped_and_called_by_the_listed_name(call):
    async with mcp_server(sys.executable, CRASH_SERVER, name="crash", prefix="c.") as server:
        tools = server.tools_by_name()
        assert {"c_files_read", "c_fs_list", "c_echo"} <= set(tools)
        assert text(await call(tools["c_files_read"], path="/x")) == "read /x"
        assert text(await call(tools["c_fs_list"])) == "listed"


async def test_leaving_the_block_stops_what_the_server_started_in_another_session(call):
    async with mcp_server(sys.executable, CRASH_SERVER, name="crash") as server:
        daemon = int(text(await call(server.tools_by_name()["daemon"])))
        assert Path(f"/proc/{daemon}").exists()
    assert_gone({daemon})


async def test_a_tool_listed_with_a_broken_schema_is_left_out_and_the_others_are_offered(call):
    async with mcp_server(sys.executable, CRASH_SERVER, name="crash") as server:
        assert "broken" not in server.tools_by_name()
        assert list(server.refused) == ["broken"]
        assert "Tool.parameters" in server.refused["broken"] and "bogus" in server.refused["broken"]
        assert text(await call(server.tools_by_name()["echo"], text="still here")) == "still here"


def test_mapped_names_are_valid_distinct_and_stable():
    names = ["files.read", "files_read", "fs/list", "a" * 80, "a" * 80 + "b", "ok", "ok", "", "ж"]
    mapped = provider_names(names)
    assert mapped[1:3] == ["files_read", "fs_list"] and mapped[5] == "ok"
    assert len(set(mapped)) == len(names)
    assert all(TOOL_NAME.fullmatch(name) for name in mapped)
    assert provider_names(names) == mapped


async def test_a_command_that_is_no_mcp_server_fails_to_start():
    before = our_children()
    with pytest.raises(
        ServerDidNotStart, match="MCP server 'python' did not start: MCPError: Connection closed"
    ):
        async with mcp_server(sys.executable, ["-c", "print('hello')"], name="python"):
            pytest.fail("entered the block")
    assert our_children() == before


async def test_a_command_that_cannot_run_fails_to_start():
    with pytest.raises(FileNotFoundError):
        async with mcp_server("/nonexistent/mcp-server"):
            pytest.fail("entered the block")


async def test_a_server_that_never_answers_times_out():
    before = our_children()
    never_answers = ["-c", "import sys; sys.stdin.read()"]  # until its stdin closes
    with pytest.raises(ServerDidNotStart, match="did not start: TimeoutError: no answer within 0.3 s"):
        async with mcp_server(sys.executable, never_answers, startup_timeout=0.3):
            pytest.fail("entered the block")
    assert our_children() == before


def test_an_image_block_becomes_an_image_part_the_model_sees():
    png = b"\x89PNG\r\n\x1a\n" + bytes(8)
    result = tool_result(
        mcp_types.CallToolResult(
            content=[
                mcp_types.TextContent(type="text", text="A screenshot:"),
                mcp_types.ImageContent(
                    type="image", data=base64.b64encode(png).decode(), mime_type="image/png"
                ),
            ]
        )
    )
    assert result.content == [Text("A screenshot:"), Image(png, "image/png")]


def test_results_become_text_with_structured_content_as_details():
    both = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text='{"a": 1}')], structured_content={"a": 1}
    )
    assert tool_result(both).content == [Text('{"a": 1}')]
    assert tool_result(both).details == {"a": 1}

    structured_only = mcp_types.CallToolResult(content=[], structured_content={"é": [1, 2]})
    assert tool_result(structured_only).content == [Text('{"é": [1, 2]}')]

    mixed = mcp_types.CallToolResult(
        content=[
            mcp_types.ImageContent(type="image", data="aGk=", mime_type="image/png"),
            mcp_types.ResourceLink(type="resource_link", name="notes", uri="file:///notes.md"),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="hello"),
            ),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.BlobResourceContents(uri="file:///b.bin", blob="aGk="),
            ),
        ],
        is_error=True,
    )
    result = tool_result(mixed)
    assert result.is_error
    assert [p.text for p in result.content] == [
        "[image/png image, not shown]",
        "[resource notes: file:///notes.md]",
        "[resource file:///a.txt]\nhello",
        "[resource file:///b.bin (binary), not shown]",
    ]
