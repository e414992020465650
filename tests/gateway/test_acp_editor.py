"""What an editor shows of ``agentrio acp`` (issue: commands, usage, raw
output, full diffs, modes, and the protocol's edges), driven by the official
ACP Python SDK, every message checked against the official schema."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import trio
from acp import text_block

from agentrio.messages import AssistantMessage, Text, ToolCall
from tests.fake_openai import start_fake_openai

from .acp_harness import FakeServerThread, RecordingClient, spawn_acp
from .acp_raw import raw_acp
from .npm_acp import official_schema


def drive(replies, main) -> None:
    with FakeServerThread(replies) as fake:
        asyncio.run(asyncio.wait_for(main(fake), 60))


@pytest.fixture(autouse=True)
def conformance() -> None:
    """These tests need the official schema (they skip, or fail in CI, without it)."""
    official_schema()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "a.txt").write_text("alpha\nbeta\ngamma\n")
    return path


def acp_args(fake: FakeServerThread, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "--model",
        "openai:fake",
        "--base-url",
        fake.server.base_url,
        "--db",
        str(tmp_path / "s.db"),
        *extra,
    ]


def test_running_bash_output_reaches_the_client_as_plain_text(workspace, tmp_path):
    replies = [
        AssistantMessage([ToolCall("b1", "bash", {"command": "echo first; sleep 0.3; echo second"})]),
        AssistantMessage([Text("Done.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient()
        args = acp_args(fake, tmp_path, "--permission", "allow")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text_block("run it")])
        running = [
            u for u in client.of_kind("tool_call_update") if u.tool_call_id == "b1" and u.status is None
        ]
        assert running, "no progress while the command ran"
        texts = [u.content[0].content.text for u in running]
        assert texts[0] == "first\n"
        assert all("{" not in t for t in texts)

    drive(replies, main)


def test_no_permission_is_asked_for_a_path_the_tool_refuses(workspace, tmp_path):
    replies = [
        AssistantMessage([ToolCall("w1", "write", {"path": "../outside.txt", "content": "x"})]),
        AssistantMessage([Text("Could not.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient()  # no answers: a permission request would fail the test
        async with spawn_acp(client, *acp_args(fake, tmp_path), stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("write")])
            assert response.stop_reason == "end_turn"
        assert client.permission_requests == []
        assert client.statuses("w1") == ["pending", "failed"]
        failed = [u for u in client.of_kind("tool_call_update") if u.tool_call_id == "w1"][-1]
        assert "outside the workspace" in failed.content[0].content.text
        assert not (tmp_path / "outside.txt").exists()

    drive(replies, main)


async def test_a_malformed_permission_answer_is_a_logged_error_and_the_call_does_not_run(workspace, tmp_path):
    replies = [
        AssistantMessage([ToolCall("w1", "write", {"path": "x.txt", "content": "one"})]),
        AssistantMessage([ToolCall("w2", "write", {"path": "y.txt", "content": "two"})]),
        AssistantMessage([Text("Stopped.")]),
    ]
    answers = iter([{"outcome": {"outcome": "selected", "optionId": "yes-please"}}, {"allowed": True}])
    async with trio.open_nursery() as nursery:
        fake = await start_fake_openai(nursery, replies)
        args = ["--model", "openai:fake", "--base-url", fake.base_url, "--db", str(tmp_path / "s.db")]
        async with raw_acp(args, official_schema(), tmp_path / "err", lambda r: next(answers)) as client:
            await client.call("initialize", {"protocolVersion": 1})
            session = (await client.call("session/new", {"cwd": str(workspace), "mcpServers": []}))["result"]
            done = await client.call(
                "session/prompt",
                {"sessionId": session["sessionId"], "prompt": [text_block("go").model_dump()]},
            )
        nursery.cancel_scope.cancel()
    assert done["result"]["stopReason"] == "end_turn"
    assert not (workspace / "x.txt").exists() and not (workspace / "y.txt").exists()
    failed = [u for u in client.updates("tool_call_update") if u.get("status") == "failed"]
    assert [u["toolCallId"] for u in failed] == ["w1", "w2"]
    assert all(
        "answer to the permission request was not understood" in u["content"][0]["content"]["text"]
        for u in failed
    )
    log = (tmp_path / "err").read_text()
    assert log.count("ERROR") == 2 and "yes-please" in log and "no outcome object" in log


async def test_session_methods_are_refused_before_a_successful_initialize(workspace, tmp_path):
    args = ["--model", "openai:fake", "--base-url", "http://127.0.0.1:9", "--db", str(tmp_path / "s.db")]
    new = {"cwd": str(workspace), "mcpServers": []}
    async with raw_acp(args, official_schema(), tmp_path / "err") as client:
        early = await client.call("session/new", new)
        assert early["error"]["code"] == -32600
        assert early["error"]["message"] == "session/new before initialize: call initialize first"
        failed = await client.call("initialize", {"protocolVersion": "1"})
        assert failed["error"]["message"] == "protocolVersion must be an integer"
        assert (await client.call("session/new", new))["error"]["code"] == -32600
        assert (await client.call("initialize", {"protocolVersion": 1}))["result"]["protocolVersion"] == 1
        assert (await client.call("session/new", new))["result"]["sessionId"]
        # Errors name what was expected in plain English.
        wrong = await client.call("session/new", {"cwd": 7, "mcpServers": []})
        assert wrong["error"]["message"] == "cwd must be a string"


def test_write_and_edit_diffs_hold_the_whole_old_and_new_text_and_results_their_raw_output(
    workspace, tmp_path
):
    (workspace / "old.txt").write_text("one\ntwo\n")
    replies = [
        AssistantMessage(
            [
                ToolCall("e1", "edit", {"path": "a.txt", "old_string": "beta", "new_string": "BETA"}),
                ToolCall("e2", "edit", {"path": "a.txt", "old_string": "gamma", "new_string": "GAMMA"}),
                ToolCall("w1", "write", {"path": "old.txt", "content": "three\n"}),
                ToolCall("w2", "write", {"path": "new.txt", "content": "fresh\n"}),
                ToolCall("r1", "read", {"path": "a.txt"}),
            ]
        ),
        AssistantMessage([Text("Done.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient(["allow-always", "allow-always"])
        async with spawn_acp(client, *acp_args(fake, tmp_path), stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text_block("change things")])
        starts = {u.tool_call_id: u for u in client.of_kind("tool_call")}

        def diff(update):
            (block,) = [c for c in update.content if c.type == "diff"]
            return block.old_text, block.new_text

        # The second edit of a.txt starts from what the first one leaves.
        assert diff(starts["e1"]) == ("alpha\nbeta\ngamma\n", "alpha\nBETA\ngamma\n")
        assert diff(starts["e2"]) == ("alpha\nBETA\ngamma\n", "alpha\nBETA\nGAMMA\n")
        assert diff(starts["w1"]) == ("one\ntwo\n", "three\n")  # the text it overwrites
        assert diff(starts["w2"]) == (None, "fresh\n")  # a new file has none
        # Asked about with the same full diff.
        asked = {r.tool_call_id: r for r in client.permission_requests}
        assert diff(asked["e1"]) == diff(starts["e1"])
        ends = {
            u.tool_call_id: u
            for u in client.of_kind("tool_call_update")
            if u.status in ("completed", "failed")
        }
        assert diff(ends["e2"]) == diff(starts["e2"]) and diff(ends["w1"]) == diff(starts["w1"])
        assert ends["e1"].raw_output["replacements"] == 1 and "+BETA" in ends["e1"].raw_output["diff"]
        assert ends["w2"].raw_output == {"text": ends["w2"].content[-1].content.text, "isError": False}
        assert "BETA" in ends["r1"].raw_output["text"]
        assert (workspace / "a.txt").read_text() == "alpha\nBETA\nGAMMA\n"

    drive(replies, main)
