"""ACP over WebSocket: security at the door, many clients per session, and
no client able to slow the agent or the others."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trio_websocket

from agentrio import (
    AgentSpec,
    AssistantMessage,
    Limits,
    ProviderError,
    ScriptedModel,
    SQLiteStore,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    agent_tool,
)
from agentrio.models.events import (
    Done,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from agentrio.tools import sandbox as sandbox_module
from agentrio.tools.builtin import coding_tools
from agentrio.tools.permissions import read_only, refuse_side_effects
from agentrio.tools.sandbox import Sandbox

from .acp_harness import ROOT
from .ws_harness import TOKEN, connected, running_gateway


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("alpha\n")
    return tmp_path


async def test_a_missing_or_wrong_token_is_refused_before_the_upgrade(workspace):
    async with running_gateway(workspace, []) as gateway:
        for url in (gateway.url(token=None), gateway.url(token="wrong")):
            with pytest.raises(trio_websocket.ConnectionRejected) as refused:
                async with trio_websocket.open_websocket_url(url):
                    pass
            assert refused.value.status_code == 401
        header = [(b"authorization", f"Bearer {TOKEN}".encode())]
        async with trio.open_nursery() as nursery:
            for url, headers in ((gateway.url(token=None), header), (gateway.url(), None)):
                async with connected(url, nursery, extra_headers=headers) as client:
                    assert (await client.call("initialize", {"protocolVersion": 1}))["protocolVersion"] == 1


async def test_a_foreign_origin_is_refused(workspace):
    async with running_gateway(workspace, []) as gateway:
        foreign = [(b"origin", b"http://evil.example")]
        with pytest.raises(trio_websocket.ConnectionRejected) as refused:
            async with trio_websocket.open_websocket_url(gateway.url(), extra_headers=foreign):
                pass
        assert refused.value.status_code == 403
        own = [(b"origin", f"http://127.0.0.1:{gateway.port}".encode())]
        async with trio.open_nursery() as nursery:
            async with connected(gateway.url(), nursery, extra_headers=own) as client:
                await client.call("initialize", {"protocolVersion": 1})


async def test_an_oversized_message_closes_the_connection_with_1009(workspace):
    async with running_gateway(workspace, [], max_message=1024) as gateway:
        async with trio_websocket.open_websocket_url(gateway.url()) as ws:
            await ws.send_message("x" * 2048)
            with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                await ws.get_message()
            assert closed.value.reason.code == 1009


async def test_the_console_is_served_without_a_token_and_other_paths_are_not_found(workspace):
    async with running_gateway(workspace, []) as gateway:
        for path, status, needle in (
            ("/", 200, b"<html"),
            ("/console.js", 200, b"session/prompt"),
            ("/nope", 404, b"not found"),
        ):
            stream = await trio.open_tcp_stream("127.0.0.1", gateway.port)
            async with stream:
                await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                data = b""
                while chunk := await stream.receive_some(65536):
                    data += chunk
            assert data.startswith(f"HTTP/1.1 {status}".encode()) and needle in data


async def test_two_clients_on_one_session_see_the_same_updates(workspace):
    replies = [
        AssistantMessage([Text("Let me look."), ToolCall("c1", "read", {"path": "a.txt"})]),
        AssistantMessage([Text("It says alpha.")]),
    ]
    async with running_gateway(workspace, replies) as gateway, trio.open_nursery() as nursery:
        async with connected(gateway.url(), nursery) as first, connected(gateway.url(), nursery) as second:
            session_id = await first.open_session()
            await second.open_session(load=session_id)
            assert await first.prompt(session_id, "what is in a.txt?") == "end_turn"
            await second.wait_for(lambda: second.text() == "Let me look.It says alpha.")

            def shown(client):
                """The turn as a client saw it: status notes aside, text chunks
                joined (a client that lags gets them merged)."""
                updates = []
                for update in client.updates():
                    kind = update["sessionUpdate"]
                    if kind in ("session_info_update", "usage_update", "available_commands_update"):
                        continue
                    if kind == "agent_message_chunk" and updates and updates[-1]["sessionUpdate"] == kind:
                        updates[-1] = {
                            **update,
                            "content": {
                                "type": "text",
                                "text": updates[-1]["content"]["text"] + update["content"]["text"],
                            },
                        }
                    else:
                        updates.append(update)
                return updates

            # The other client also sees the prompt that started the turn.
            assert shown(second)[0] == {
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": "what is in a.txt?"},
            }
            assert shown(second)[1:] == shown(first)
            assert [u["status"] for u in shown(first) if u.get("toolCallId") == "c1"] == [
                "pending",
                "in_progress",
                "completed",
            ]


@pytest.mark.parametrize(
    "limit",
    [{"queue_bytes": 1024 * 1024}, {"budget_bytes": 1024 * 1024}, {"stall_timeout": 0.1}],
    ids=["its-queue", "the-server-budget", "stalled"],
)
async def test_a_stalled_client_is_dropped_without_delaying_the_agent_or_the_other_client(workspace, limit):
    # Far more than the stalled client's socket buffers and the limit hold.
    text = "".join(f"line {i:06d} " + "x" * 1000 + "\n" for i in range(3000))
    replies = [AssistantMessage([Text(text)]), AssistantMessage([Text(text)])]
    async with running_gateway(workspace, replies, chunk_size=1024, **limit) as gateway:
        async with trio.open_nursery() as nursery, connected(gateway.url(), nursery) as reader:
            session_id = await reader.open_session()
            async with trio_websocket.open_websocket_url(gateway.url()) as stalled:
                for request in (
                    {"id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
                    {
                        "id": 2,
                        "method": "session/load",
                        "params": {"sessionId": session_id, "cwd": "", "mcpServers": []},
                    },
                ):
                    await stalled.send_message(json.dumps({"jsonrpc": "2.0", **request}))
                # It reads nothing while the agent streams 3 MB to the session.
                await trio.sleep(0.2)
                session = gateway.hub.sessions[session_id]
                started = trio.current_time()
                answered = trio.Event()

                async def prompt() -> None:
                    assert await reader.prompt(session_id, "talk") == "end_turn"
                    answered.set()

                nursery.start_soon(prompt)
                with trio.fail_after(30):
                    while not any(peer.dropped for peer in session.peers):
                        await trio.sleep(0.01)
                # Now it reads: what was sent before it was dropped, then the close.
                with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                    while True:
                        await stalled.get_message()
                assert closed.value.reason.code == 1013
                assert "session/load" in closed.value.reason.reason
                await answered.wait()
                beside_stalled = trio.current_time() - started
                assert reader.text() == text
            # The same, alone: the figure to compare with.
            started = trio.current_time()
            assert await reader.prompt(session_id, "again") == "end_turn"
            alone = trio.current_time() - started
            assert reader.text() == text * 2
        print(
            f"\n3 MB to a reader: {beside_stalled:.2f}s beside a stalled client, {alone:.2f}s alone "
            f"(ratio {beside_stalled / alone:.2f})"
        )


async def test_a_dropped_connection_does_not_stop_the_agent_and_load_continues(workspace, tmp_path):
    release = trio.Event()

    async def wait(args, ctx):
        await release.wait()
        return ToolResult("released")

    gate = Tool("gate", "Waits.", {"type": "object", "properties": {}}, wait)
    replies = [
        AssistantMessage([Text("Waiting."), ToolCall("g1", "gate", {})]),
        AssistantMessage([Text("Released.")]),
        AssistantMessage([Text("Again.")]),
    ]
    store = SQLiteStore(str(tmp_path / "s.db"))
    async with running_gateway(workspace, replies, tools=[gate], store=store) as gateway:
        async with trio.open_nursery() as nursery:
            async with connected(gateway.url(), nursery) as first:
                session_id = await first.open_session()
                prompt_id = 99
                await first.ws.send_message(
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": prompt_id,
                            "method": "session/prompt",
                            "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "wait"}]},
                        }
                    )
                )
                await first.wait_for(lambda: any(u.get("status") == "in_progress" for u in first.updates()))
            # The client is gone; the agent goes on.
            session = gateway.hub.sessions[session_id]
            assert session.status == "running"
            release.set()
            await session.agent.wait_idle()
            async with connected(gateway.url(), nursery) as second:
                await second.open_session(load=session_id)
                replayed = [u for u in second.updates() if u["sessionUpdate"] != "session_info_update"]
                assert [u["sessionUpdate"] for u in replayed] == [
                    "user_message_chunk",
                    "agent_message_chunk",
                    "tool_call",
                    "tool_call_update",
                    "agent_message_chunk",
                ]
                assert replayed[-1]["content"]["text"] == "Released."
                assert second.updates("session_info_update")[-1]["_meta"]["agentrio"]["status"] == "idle"
                assert await second.prompt(session_id, "again") == "end_turn"
                assert second.text().endswith("Again.")


async def test_a_child_agents_updates_carry_its_path_and_keep_their_tool_call_ids_apart(workspace):
    child = AgentSpec(
        "reader",
        ScriptedModel(
            [
                AssistantMessage([Text("child reading"), ToolCall("c1", "read", {"path": "a.txt"})]),
                AssistantMessage([Text("alpha")]),
            ]
        ),
        tools=coding_tools(workspace),
    )
    helper = agent_tool(child, name="helper", description="Reads for you.")
    parent_model = ScriptedModel(
        [
            AssistantMessage([ToolCall("c1", "helper", {"task": "read a.txt"})]),
            AssistantMessage([Text("The helper says alpha.")]),
        ]
    )

    def spec_for(cwd):
        return AgentSpec("main", parent_model, tools=[helper])

    async with running_gateway(workspace, [], spec_for=spec_for) as gateway, trio.open_nursery() as nursery:
        async with connected(gateway.url(), nursery) as client:
            session_id = await client.open_session()
            assert await client.prompt(session_id, "ask the helper") == "end_turn"
            listed = await client.call("session/list")  # the child's session is not listed on its own
    updates = client.updates()
    children = [u for u in updates if "_meta" in u and "path" in u["_meta"].get("agentrio", {})]
    child_id = children[0]["_meta"]["agentrio"]["path"][0]
    assert all(
        (u["_meta"]["agentrio"]["path"], u["_meta"]["agentrio"]["names"]) == ([child_id], ["reader"])
        for u in children
    )
    # The child's call c1 and the parent's call c1 stay apart.
    calls = [
        (u.get("toolCallId"), u.get("status")) for u in updates if u["sessionUpdate"].startswith("tool_call")
    ]
    assert calls == [
        ("c1", "pending"),
        ("c1", "in_progress"),
        (f"{child_id}/c1", "pending"),
        (f"{child_id}/c1", "in_progress"),
        (f"{child_id}/c1", "completed"),
        ("c1", "completed"),
    ]
    child_text = "".join(
        u["content"]["text"] for u in children if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert child_text == "child readingalpha"
    assert client.text() == "child readingalphaThe helper says alpha."
    assert [(s["sessionId"], s["title"]) for s in listed["sessions"]] == [(session_id, "ask the helper")]
    assert listed["sessions"][0]["_meta"]["agentrio"]["children"] == 1
    assert listed["sessions"][0]["_meta"]["agentrio"]["agent"] == "main"


async def test_session_new_starts_its_mcp_servers_inside_the_agents_scope(workspace):
    replies = [
        AssistantMessage([ToolCall("t1", "time_get_current_time", {"timezone": "UTC"})]),
        AssistantMessage([Text("It is now.")]),
    ]
    async with running_gateway(workspace, replies) as gateway, trio.open_nursery() as nursery:
        async with connected(gateway.url(), nursery) as client:
            await client.call("initialize", {"protocolVersion": 1})
            server = {"name": "time", "command": sys.executable, "args": ["-m", "mcp_server_time"], "env": []}
            session_id = (await client.call("session/new", {"cwd": str(workspace), "mcpServers": [server]}))[
                "sessionId"
            ]
            assert await client.prompt(session_id, "what time is it?") == "end_turn"
            done = [u for u in client.updates("tool_call_update") if u.get("status") == "completed"]
            assert done and '"timezone": "UTC"' in done[0]["content"][0]["content"]["text"]
            with pytest.raises(RuntimeError, match="only stdio MCP servers"):
                await client.call(
                    "session/new",
                    {
                        "cwd": str(workspace),
                        "mcpServers": [
                            {"type": "http", "name": "x", "url": "http://127.0.0.1:1/", "headers": []}
                        ],
                    },
                )


async def test_run_stop_reasons_map_to_acp_and_errors_come_back_as_errors(workspace):
    model = ScriptedModel(
        [
            AssistantMessage([ToolCall("r1", "read", {"path": "a.txt"})]),
            ProviderError(status=400, message="the provider is down"),
        ]
    )

    def spec_for(cwd):
        return AgentSpec("main", model, tools=coding_tools(cwd), limits=Limits(max_turns=1))

    async with running_gateway(workspace, [], spec_for=spec_for) as gateway, trio.open_nursery() as nursery:
        async with connected(gateway.url(), nursery) as client:
            session_id = await client.open_session()
            assert await client.prompt(session_id, "read") == "max_turn_requests"
            with pytest.raises(RuntimeError) as failed:
                await client.prompt(session_id, "again")
            error = failed.value.args[0]
            assert error["code"] == -32603 and error["data"] == {"stopReason": "model_error"}
            assert "the provider is down" in error["message"]
            # The session goes on serving.
            assert (await client.call("session/list"))["sessions"][0]["sessionId"] == session_id


async def test_an_unanswered_permission_request_is_offered_again_to_the_next_client(workspace):
    replies = [
        AssistantMessage([ToolCall("w1", "write", {"path": "x.txt", "content": "x"})]),
        AssistantMessage([Text("Written.")]),
    ]
    async with (
        running_gateway(workspace, replies, permission=read_only) as gateway,
        trio.open_nursery() as nursery,
    ):
        async with connected(gateway.url(), nursery) as first:  # it never answers
            session_id = await first.open_session()
            await first.notify(
                "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "write x"}]}
            )
            await first.wait_for(lambda: first.permission_requests)
        assert not (workspace / "x.txt").exists()
        async with connected(gateway.url(), nursery, answers=["allow-once"]) as second:
            await second.open_session(load=session_id)
            await second.wait_for(lambda: second.text() == "Written.")
            assert [r["toolCall"]["toolCallId"] for r in second.permission_requests] == ["w1"]
        assert (workspace / "x.txt").read_text() == "x"


class PausingModel:
    """First request: streams "Hello ", waits for ``resume``, then "world"
    and a call of ``gate``; later requests: "Done."."""

    def __init__(self) -> None:
        self.resume = trio.Event()
        self.requests = 0

    async def stream(self, request):
        self.requests += 1
        yield StreamStart()
        yield TextStart(0)
        if self.requests > 1:
            yield TextDelta(0, "Done.")
            yield TextEnd(0)
            yield Done("stop")
            return
        yield TextDelta(0, "Hello ")
        await self.resume.wait()
        yield TextDelta(0, "world")
        yield TextEnd(0)
        yield ToolCallStart(1, "g1", "gate")
        yield ToolCallDelta(1, "{}")
        yield ToolCallEnd(1)
        yield Done("tool_use")


def transcript(client) -> list[dict]:
    """What a client was shown, status, usage and command notes aside and
    text chunks joined."""
    shown = []
    for update in client.updates():
        kind = update["sessionUpdate"]
        if kind in ("session_info_update", "usage_update", "available_commands_update"):
            continue
        if kind.endswith("_chunk") and shown and shown[-1]["sessionUpdate"] == kind:
            shown[-1] = {
                **update,
                "content": {"type": "text", "text": shown[-1]["content"]["text"] + update["content"]["text"]},
            }
        else:
            shown.append({k: v for k, v in update.items() if k != "_meta"})
    return shown


async def test_a_client_that_loads_mid_stream_or_mid_call_misses_nothing_and_sees_nothing_twice(workspace):
    model = PausingModel()
    release = trio.Event()

    async def wait(args, ctx):
        await release.wait()
        return ToolResult("released")

    gate = Tool("gate", "Waits.", {"type": "object", "properties": {}}, wait)

    def spec_for(cwd):
        return AgentSpec("main", model, tools=[gate])

    async with running_gateway(workspace, [], spec_for=spec_for) as gateway, trio.open_nursery() as nursery:
        async with (
            connected(gateway.url(), nursery) as first,
            connected(gateway.url(), nursery) as second,
            connected(gateway.url(), nursery) as third,
        ):
            session_id = await first.open_session()
            await first.notify(
                "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
            )
            await first.wait_for(lambda: first.text() == "Hello ")
            await second.open_session(load=session_id)  # mid-message
            assert transcript(second) == [
                {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}},
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hello "}},
            ]
            model.resume.set()
            await first.wait_for(lambda: any(u.get("status") == "in_progress" for u in first.updates()))
            await third.open_session(load=session_id)  # mid-call
            assert [u.get("status") for u in transcript(third) if u.get("toolCallId") == "g1"] == [
                "pending",
                "in_progress",
            ]
            release.set()
            for client in (first, second, third):
                await client.wait_for(lambda c=client: c.text().endswith("Done."))
            whole = transcript(second)
            assert [u["sessionUpdate"] for u in whole] == [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update",
                "tool_call_update",
                "agent_message_chunk",
            ]
            assert whole[1]["content"]["text"] == "Hello world"
            assert transcript(third) == whole
            assert transcript(first) == whole[1:]  # its own prompt is not echoed to it


async def test_a_client_that_never_finishes_its_request_or_does_not_upgrade_is_let_go(workspace):
    async with running_gateway(workspace, [], head_timeout=0.5) as gateway:
        for request, expected in (
            (b"GET /acp HTTP/1.1\r\nHost: x\r\n", b""),  # no end of head, ever
            (f"GET /acp?token={TOKEN} HTTP/1.1\r\nHost: x\r\n\r\n".encode(), b"HTTP/1.1 400"),
            (b"NONSENSE\r\n\r\n", b""),
        ):
            stream = await trio.open_tcp_stream("127.0.0.1", gateway.port)
            async with stream:
                await stream.send_all(request)
                answer = b""
                with trio.fail_after(10):
                    while chunk := await stream.receive_some(65536):
                        answer += chunk
            assert answer.startswith(expected)


async def test_a_session_holds_at_most_16_prompts_and_a_cancel_is_never_queued_behind_them(workspace):
    async def forever(args, ctx):
        await trio.sleep_forever()

    wait = Tool("wait", "Waits until cancelled.", {"type": "object", "properties": {}}, forever)
    replies = [AssistantMessage([ToolCall("w1", "wait", {})])]
    async with running_gateway(workspace, replies, tools=[wait]) as gateway, trio.open_nursery() as nursery:
        async with connected(gateway.url(), nursery) as client:
            session_id = await client.open_session()
            stops = []

            async def prompt(i):
                try:
                    stops.append(await client.prompt(session_id, f"prompt {i}"))
                except RuntimeError as exc:
                    stops.append(exc.args[0]["code"])

            with trio.fail_after(20):
                async with trio.open_nursery() as prompts:
                    for i in range(16):
                        prompts.start_soon(prompt, i)
                    await client.wait_for(
                        lambda: any(u.get("status") == "in_progress" for u in client.updates())
                    )
                    while len(gateway.hub.sessions[session_id]._prompts) < 16:
                        await trio.sleep(0.01)
                    await prompt(16)
                    assert stops == [-32011]
                    await client.notify("session/cancel", {"sessionId": session_id})
            assert sorted(stops, key=str) == [-32011] + ["cancelled"] * 16


async def test_a_clients_mcp_servers_go_through_the_permission_policy(workspace):
    server = {"name": "time", "command": sys.executable, "args": ["-m", "mcp_server_time"], "env": []}
    params = {"cwd": str(workspace), "mcpServers": [server]}
    async with (
        running_gateway(workspace, [], permission=refuse_side_effects) as gateway,
        trio.open_nursery() as nursery,
        connected(gateway.url(), nursery) as client,
    ):
        await client.call("initialize", {"protocolVersion": 1})
        with pytest.raises(RuntimeError) as refused:
            await client.call("session/new", params)
        assert refused.value.args[0]["code"] == -32012
        assert "'time' was not started: start_mcp_server has side effects" in refused.value.args[0]["message"]
        assert not client.permission_requests and not gateway.hub.sessions
    async with (
        running_gateway(workspace, [], permission=read_only) as gateway,
        trio.open_nursery() as nursery,
    ):
        async with connected(gateway.url(), nursery, answers=["reject-once", "allow-once"]) as client:
            await client.call("initialize", {"protocolVersion": 1})
            with pytest.raises(RuntimeError) as refused:
                await client.call("session/new", params)
            assert (
                refused.value.args[0]["message"]
                == "the MCP server 'time' was not started: the user rejected it"
            )
            asked = client.permission_requests[0]
            assert (
                asked["toolCall"]["title"]
                == f"start the MCP server time: {sys.executable} -m mcp_server_time"
            )
            assert [o["optionId"] for o in asked["options"]] == ["allow-once", "reject-once"]
            session_id = (await client.call("session/new", params))["sessionId"]
            assert "time_get_current_time" in gateway.hub.sessions[session_id].agent.tools


async def test_a_client_is_served_while_260_idle_sockets_are_open_against_256_descriptors(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "fake", "XDG_DATA_HOME": str(tmp_path)}
    command = [
        sys.executable,
        "-c",
        (
            "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_NOFILE, "
            "(256, 256)); sys.argv = ['agentrio', *sys.argv[1:]]; runpy.run_module('agentrio', run_name='__main__')"
        ),
        "serve",
        "--port",
        "0",
        "--token",
        TOKEN * 2,
        "--model",
        "openai:x",
        "--db",
        str(tmp_path / "s.db"),
    ]
    process = await trio.lowlevel.open_process(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path
    )
    try:
        banner = b""
        with trio.fail_after(30):
            while b"\n" not in banner:
                banner += await process.stdout.receive_some(4096)
        port = int(banner.split(b"/?token=")[0].rsplit(b":", 1)[1])
        idle = [await trio.open_tcp_stream("127.0.0.1", port) for _ in range(260)]
        await trio.sleep(0.5)
        with trio.fail_after(4):  # before the idle sockets' head deadline could free anything
            async with trio_websocket.open_websocket_url(
                f"ws://127.0.0.1:{port}/acp?token={TOKEN * 2}"
            ) as ws:
                await ws.send_message(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
                    )
                )
                assert json.loads(await ws.get_message())["result"]["protocolVersion"] == 1
        # The server let the oldest idle sockets go to make room: it holds 32 at most.
        await trio.sleep(1)
        closed = 0
        for stream in idle:
            with trio.move_on_after(0.01):
                closed += await stream.receive_some(1) == b""
        assert closed >= 260 - 32
        for stream in idle:
            await stream.aclose()
    finally:
        process.terminate()
        await process.wait()


async def test_a_session_is_deleted_when_idle_and_not_while_it_runs(workspace, tmp_path):
    release = trio.Event()

    async def wait(args, ctx):
        await release.wait()
        return ToolResult("released")

    gate = Tool("gate", "Waits.", {"type": "object", "properties": {}}, wait)
    replies = [AssistantMessage([ToolCall("g1", "gate", {})]), AssistantMessage([Text("Done.")])]
    store = SQLiteStore(str(tmp_path / "s.db"))
    async with (
        running_gateway(workspace, replies, tools=[gate], store=store) as gateway,
        trio.open_nursery() as nursery,
        connected(gateway.url(), nursery) as client,
    ):
        session_id = await client.open_session()
        await client.notify(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "wait"}]}
        )
        await client.wait_for(lambda: any(u.get("status") == "in_progress" for u in client.updates()))
        with pytest.raises(RuntimeError) as refused:
            await client.call("_agentrio/session/delete", {"sessionId": session_id})
        assert refused.value.args[0]["code"] == -32011
        release.set()
        await client.wait_for(lambda: client.text() == "Done.")
        await gateway.hub.sessions[session_id].agent.wait_idle()
        assert await client.call("_agentrio/session/delete", {"sessionId": session_id}) == {}
        assert (await client.call("session/list"))["sessions"] == []
        with pytest.raises(RuntimeError) as gone:
            await client.call("session/load", {"sessionId": session_id, "cwd": "", "mcpServers": []})
        assert gone.value.args[0]["code"] == -32002


async def test_a_clients_mcp_server_runs_in_the_servers_sandbox(workspace):
    if (reason := sandbox_module._unusable("bubblewrap")) is not None:
        pytest.skip(f"bubblewrap cannot sandbox here: {reason}")
    server = {
        "name": "w",
        "command": sys.executable,
        "env": [],
        "args": [str(ROOT / "tests" / "tools" / "mcp_write_server.py")],
    }
    replies = [
        AssistantMessage([ToolCall("w1", "w_write", {"path": "file", "text": "x"})]),
        AssistantMessage([Text("Tried.")]),
    ]
    sandbox = Sandbox("read-only", mechanism="bubblewrap")
    async with (
        running_gateway(workspace, replies, sandbox=sandbox) as gateway,
        trio.open_nursery() as nursery,
        connected(gateway.url(), nursery) as client,
    ):
        await client.call("initialize", {"protocolVersion": 1})
        session_id = (await client.call("session/new", {"cwd": str(workspace), "mcpServers": [server]}))[
            "sessionId"
        ]
        assert await client.prompt(session_id, "write a file") == "end_turn"
        [failed] = [u for u in client.updates("tool_call_update") if u.get("status") == "failed"]
        assert "Read-only file system" in failed["content"][0]["content"]["text"]
    assert not (workspace / "file").exists()
