"""``agentrio acp`` driven by the official ACP SDK, over real pipes, against
a fake OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError, schema, text_block

from agentrio.messages import AssistantMessage, Text, ToolCall

from .acp_harness import FakeServerThread, RecordingClient, acp_args, drive, spawn_acp


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "a.txt").write_text("alpha\n")
    (path / "b.txt").write_text("beta\n")
    return path


def test_a_prompt_streams_text_and_parallel_tool_calls_and_ends_the_turn(workspace, tmp_path):
    replies = [
        AssistantMessage(
            [
                Text("Reading both."),
                ToolCall("c1", "read", {"path": "a.txt"}),
                ToolCall("c2", "read", {"path": "b.txt"}),
            ]
        ),
        AssistantMessage([Text("Both read: alpha and beta.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient()
        async with spawn_acp(client, *acp_args(fake, tmp_path), stderr_path=tmp_path / "err") as (
            conn,
            check,
        ):
            init = await conn.initialize(protocol_version=1)
            assert init.protocol_version == 1 and init.agent_capabilities.load_session
            assert init.agent_info.name == "agentrio"
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("read a and b")])
            assert response.stop_reason == "end_turn"
        assert client.text() == "Reading both.Both read: alpha and beta."
        # Both calls are announced (with their arguments) before either runs;
        # each goes pending -> in_progress -> completed; results in model order.
        kinds = [
            (u.session_update, getattr(u, "tool_call_id", None), getattr(u, "status", None))
            for u in client.updates
            if u.session_update.startswith("tool_call")
        ]
        assert kinds[:2] == [("tool_call", "c1", "pending"), ("tool_call", "c2", "pending")]
        assert client.statuses("c1") == ["pending", "in_progress", "completed"]
        assert client.statuses("c2") == ["pending", "in_progress", "completed"]
        completed = [k[1] for k in kinds if k[2] == "completed"]
        assert completed == ["c1", "c2"]
        starts = client.of_kind("tool_call")
        assert [s.kind for s in starts] == ["read", "read"]
        assert starts[0].raw_input == {"path": "a.txt"}
        assert starts[0].locations[0].path == str(workspace / "a.txt")
        ends = [u for u in client.of_kind("tool_call_update") if u.status == "completed"]
        assert "alpha" in ends[0].content[0].content.text and "beta" in ends[1].content[0].content.text
        assert all(end.field_meta["agentrio"]["duration"] > 0 for end in ends)
        # The text streamed before the calls, the answer after them.
        shown = ("session_info_update", "usage_update", "available_commands_update")
        order = [u.session_update for u in client.updates if u.session_update not in shown]
        assert order.index("tool_call") > order.index("agent_message_chunk")
        assert order[-1] == "agent_message_chunk"
        # The model saw both results.
        second = fake.requests[1].body["messages"]
        assert [m["role"] for m in second[-2:]] == ["tool", "tool"]
        assert len(check.sent) > 10

    drive(replies, main)


def test_permission_is_asked_and_answered_both_ways_and_always_is_remembered(workspace, tmp_path):
    replies = [
        AssistantMessage([ToolCall("w1", "write", {"path": "x.txt", "content": "one"})]),
        AssistantMessage([ToolCall("w2", "write", {"path": "x.txt", "content": "two"})]),
        AssistantMessage([ToolCall("w3", "write", {"path": "y.txt", "content": "three"})]),
        AssistantMessage([ToolCall("b1", "bash", {"command": "echo hi > z.txt"})]),
        AssistantMessage([ToolCall("b2", "bash", {"command": "echo again > z.txt"})]),
        AssistantMessage([Text("Done.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient(["reject-once", "allow-always", "reject-always"])
        async with spawn_acp(client, *acp_args(fake, tmp_path), stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("write things")])
            assert response.stop_reason == "end_turn"
        # Asked for w1 (rejected once), w2 (always allowed), b1 (always rejected);
        # w3 and b2 were decided by the remembered answers.
        assert [r.tool_call_id for r in client.permission_requests] == ["w1", "w2", "b1"]
        first = client.permission_requests[0]
        assert first.kind == "edit" and first.status == "pending"
        assert first.content[0].type == "diff" and first.content[0].new_text == "one"
        assert client.statuses("w1") == ["pending", "failed"]
        assert client.statuses("w2") == ["pending", "in_progress", "completed"]
        assert client.statuses("w3") == ["pending", "in_progress", "completed"]
        assert client.statuses("b1") == ["pending", "failed"]
        assert client.statuses("b2") == ["pending", "failed"]
        assert (workspace / "x.txt").read_text() == "two"
        assert (workspace / "y.txt").read_text() == "three"
        assert not (workspace / "z.txt").exists()
        done = [u for u in client.of_kind("tool_call_update") if u.tool_call_id == "w3" and u.status][-1]
        assert done.content[0].type == "diff" and done.content[0].new_text == "three"

    drive(replies, main)


def test_cancel_mid_tool_ends_the_turn_cancelled_and_keeps_history_valid(workspace, tmp_path):
    replies = [
        AssistantMessage([Text("Sleeping."), ToolCall("s1", "bash", {"command": "sleep 30"})]),
        AssistantMessage([Text("Awake again.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient()
        args = acp_args(fake, tmp_path, "--permission", "allow")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            prompt = asyncio.ensure_future(
                conn.prompt(session_id=session.session_id, prompt=[text_block("sleep")])
            )
            await client.wait_for(lambda: "in_progress" in client.statuses("s1"))
            await conn.cancel(session_id=session.session_id)
            assert (await prompt).stop_reason == "cancelled"
            assert client.statuses("s1") == ["pending", "in_progress", "failed"]
            again = await conn.prompt(session_id=session.session_id, prompt=[text_block("wake up")])
            assert again.stop_reason == "end_turn"
        assert client.text().endswith("Awake again.")
        # The next request is provider-valid: the interrupted call has its result.
        messages = fake.requests[1].body["messages"]
        roles = [m["role"] for m in messages]
        assert roles[-3:] == ["assistant", "tool", "user"]
        assert messages[-3]["tool_calls"][0]["id"] == "s1" and messages[-2]["tool_call_id"] == "s1"

    drive(replies, main)


def test_load_after_a_restart_replays_the_history_then_continues_live(workspace, tmp_path):
    replies = [
        AssistantMessage([Text("Reading."), ToolCall("r1", "read", {"path": "a.txt"})]),
        AssistantMessage([Text("It says alpha.")]),
        AssistantMessage([Text("Still here.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        first = RecordingClient()
        async with spawn_acp(first, *acp_args(fake, tmp_path), stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=session_id, prompt=[text_block("what is in a?")])
        second = RecordingClient()
        async with spawn_acp(second, *acp_args(fake, tmp_path), stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            listed = await conn.list_sessions()
            assert session_id in [s.session_id for s in listed.sessions]
            await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
            replayed = [
                (u.session_update, getattr(u, "status", None))
                for u in second.updates
                if u.session_update != "session_info_update"
            ]
            assert replayed == [
                ("user_message_chunk", None),
                ("agent_message_chunk", None),
                ("tool_call", "pending"),
                ("tool_call_update", "completed"),
                ("agent_message_chunk", None),
            ]
            assert second.updates[0].content.text == "what is in a?"
            response = await conn.prompt(session_id=session_id, prompt=[text_block("still there?")])
            assert response.stop_reason == "end_turn"
        assert second.text().endswith("Still here.")
        history = fake.requests[2].body["messages"]
        assert [m["role"] for m in history if m["role"] != "system"] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
        ]

    drive(replies, main)


def test_steer_reaches_the_running_turn_and_followup_gets_a_turn_of_its_own(workspace, tmp_path):
    gate = workspace / "go"
    replies = [
        AssistantMessage(
            [ToolCall("g1", "bash", {"command": f"while [ ! -f {gate} ]; do sleep 0.02; done"})]
        ),
        AssistantMessage([Text("Steered.")]),
        AssistantMessage([Text("Followed up.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient()
        args = acp_args(fake, tmp_path, "--permission", "allow")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            prompt = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("wait")]))
            await client.wait_for(lambda: "in_progress" in client.statuses("g1"))
            steered = await conn.ext_method(
                "agentrio/steer", {"sessionId": session_id, "prompt": [{"type": "text", "text": "also X"}]}
            )
            followed = await conn.ext_method(
                "agentrio/followup", {"sessionId": session_id, "prompt": [{"type": "text", "text": "then Y"}]}
            )
            assert steered["inputId"] != followed["inputId"]
            gate.touch()
            assert (await prompt).stop_reason == "end_turn"
        second, third = fake.requests[1].body["messages"], fake.requests[2].body["messages"]
        assert [m["role"] for m in second[-2:]] == ["tool", "user"] and second[-1]["content"] == "also X"
        assert third[-2]["content"] == "Steered." and third[-1]["content"] == "then Y"
        assert client.text() == "Steered.Followed up."

    drive(replies, main)


def test_file_tools_go_through_a_client_that_offers_its_buffers(workspace, tmp_path):
    a, new = str(workspace / "a.txt"), str(workspace / "new.txt")
    replies = [
        AssistantMessage([ToolCall("r1", "read", {"path": "a.txt"})]),
        AssistantMessage(
            [ToolCall("e1", "edit", {"path": "a.txt", "old_string": "unsaved", "new_string": "saved"})]
        ),
        AssistantMessage([ToolCall("w1", "write", {"path": "new.txt", "content": "fresh\n"})]),
        AssistantMessage([ToolCall("x1", "read", {"path": "../outside.txt"})]),
        AssistantMessage([Text("Done.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient(buffers={a: "unsaved alpha\n"})
        args = acp_args(fake, tmp_path, "--permission", "allow")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            files = schema.ClientCapabilities(
                fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True)
            )
            await conn.initialize(protocol_version=1, client_capabilities=files)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("edit a")])
            assert response.stop_reason == "end_turn"
        # The model read the unsaved buffer; the edit and the write went to the editor, not the disk.
        read = [u for u in client.of_kind("tool_call_update") if u.tool_call_id == "r1" and u.status][-1]
        assert "unsaved alpha" in read.content[0].content.text
        assert client.file_requests == [("read", a), ("read", a), ("write", a), ("write", new)]
        assert client.buffers == {a: "saved alpha\n", new: "fresh\n"}
        assert (workspace / "a.txt").read_text() == "alpha\n" and not (workspace / "new.txt").exists()
        # Paths outside the workspace are refused before the editor is asked.
        assert client.statuses("x1") == ["pending", "in_progress", "failed"]

    drive(replies, main)


def test_load_of_a_session_another_process_has_open_answers_an_error_and_the_gateway_goes_on(
    workspace, tmp_path
):
    replies = [AssistantMessage([Text("First here.")]), AssistantMessage([Text("Second here.")])]

    async def main(fake: FakeServerThread) -> None:
        first = RecordingClient()
        async with spawn_acp(first, *acp_args(fake, tmp_path), stderr_path=tmp_path / "first.err") as (
            one,
            _,
        ):
            await one.initialize(protocol_version=1)
            session_id = (await one.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await one.prompt(session_id=session_id, prompt=[text_block("hello")])
            second = RecordingClient()
            async with spawn_acp(second, *acp_args(fake, tmp_path), stderr_path=tmp_path / "second.err") as (
                two,
                _,
            ):
                await two.initialize(protocol_version=1)
                with pytest.raises(RequestError) as refused:
                    await two.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
                assert refused.value.code == -32010
                assert str(refused.value).startswith(
                    f"session {session_id!r} is open for writing in another process (pid "
                )
                assert refused.value.data["sessionId"] == session_id
                assert refused.value.data["holder"].startswith("pid ")
                # Its history came first, to read only.
                assert refused.value.data["readOnly"] is True
                assert [u.session_update for u in second.updates] == [
                    "user_message_chunk",
                    "agent_message_chunk",
                ]
                assert second.text() == "First here."
                # The second gateway goes on: its own sessions work.
                other = (await two.new_session(cwd=str(workspace), mcp_servers=[])).session_id
                response = await two.prompt(session_id=other, prompt=[text_block("and you?")])
                assert response.stop_reason == "end_turn"
        assert "Traceback" not in (tmp_path / "second.err").read_text()

    drive(replies, main)


def test_a_prompt_queued_when_the_process_is_killed_is_shown_queued_after_a_restart_and_runs(
    workspace, tmp_path
):
    replies = [
        AssistantMessage([ToolCall("s1", "bash", {"command": "sleep 30"})]),
        AssistantMessage([Text("Resumed.")]),
    ]

    def queued(client):
        return [u.field_meta["agentrio"].get("queued") for u in client.of_kind("session_info_update")]

    async def main(fake: FakeServerThread) -> None:
        args = acp_args(fake, tmp_path, "--permission", "allow")
        first = RecordingClient()
        async with spawn_acp(first, *args, stderr_path=tmp_path / "err") as (conn, check):
            await conn.initialize(protocol_version=1)
            session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            running = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("sleep")]))
            await first.wait_for(lambda: "in_progress" in first.statuses("s1"))
            waiting = asyncio.ensure_future(
                conn.prompt(session_id=session_id, prompt=[text_block("then this")])
            )
            await first.wait_for(lambda: any(q and q[0]["text"] == "then this" for q in queued(first)))
            check.process.kill()  # kill -9, with "then this" queued
            await check.process.wait()
            for prompt in (running, waiting):
                with pytest.raises(ConnectionError):
                    await prompt
        second = RecordingClient()
        async with spawn_acp(second, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
            # The replay ends with the prompt shown queued; then it runs, with no new input.
            assert [q["text"] for q in queued(second)[0]] == ["then this"]
            await second.wait_for(lambda: second.text() == "Resumed.")
        assert second.of_kind("user_message_chunk")[-1].content.text == "then this"
        resumed = fake.requests[-1].body["messages"]
        assert resumed[-1] == {"role": "user", "content": "then this"}

    drive(replies, main)
