"""What an editor shows of ``agentrio acp`` (issue: commands, usage, raw
output, full diffs, modes, and the protocol's edges), driven by the official
ACP Python SDK, every message checked against the official schema."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from acp import RequestError, text_block

from agentrio.messages import AssistantMessage, Text, ToolCall, Usage
from agentrio.tools.sandbox import Sandbox
from tests.fake_openai import start_fake_openai

from .acp_harness import FakeServerThread, RecordingClient, acp_args, drive, spawn_acp
from .acp_raw import raw_acp
from .npm_acp import official_schema


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


def _index(check, predicate) -> int:
    return next(i for i, m in enumerate(check.sent) if predicate(m))


def _update_kind(message) -> str | None:
    return message.get("params", {}).get("update", {}).get("sessionUpdate") if "method" in message else None


def test_slash_commands_are_announced_after_session_new_and_run_without_the_model(workspace, tmp_path):
    replies = [
        AssistantMessage([Text("Hello.")], usage=Usage(input_tokens=1000, output_tokens=500)),
        AssistantMessage([Text("The user said hi; the agent said hello.")]),  # /compact's summary
        AssistantMessage([Text("It is a folder.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient()
        args = acp_args(fake, tmp_path, "--model", "openai:gpt-4.1")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, check):
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            await client.wait_for(lambda: client.of_kind("available_commands_update"))
            # Announced after the answer that names the session.
            answered = _index(check, lambda m: m.get("result", {}).get("sessionId") == sid)
            announced = _index(check, lambda m: _update_kind(m) == "available_commands_update")
            assert answered < announced
            names = [c.name for c in client.of_kind("available_commands_update")[0].available_commands]
            assert {"compact", "model", "mode", "fork", "cost"} <= set(names)

            async def run(text: str) -> str:
                before = len(client.of_kind("agent_message_chunk"))
                response = await conn.prompt(session_id=sid, prompt=[text_block(text)])
                assert response.stop_reason == "end_turn"
                return "".join(u.content.text for u in client.of_kind("agent_message_chunk")[before:])

            assert await run("hi") == "Hello."
            assert await run("/cost") == (
                "This session used 1,000 input and 500 output tokens (0 read from cache, 0 written to it); "
                "it cost $0.0060."
            )
            assert await run("/model") == "Model: openai:gpt-4.1"
            assert await run("/mode read-only") == "Mode: read-only (modes: ask, allow, read-only)"
            assert client.of_kind("current_mode_update")[-1].current_mode_id == "read-only"
            forked = await run("/fork")
            assert forked.startswith("Forked into session session_") and "(2 messages)" in forked
            assert (await run("/compact")).startswith("Compacted the conversation from about 1,500 to about")
            assert (
                await run("/mode bogus")
                == "/mode failed: no mode 'bogus'; the modes are ask, allow, read-only"
            )
            # Not a command: the model gets it.
            assert await run("/usr/local is what?") == "It is a folder."
        assert len(fake.requests) == 3
        assert fake.requests[2].body["messages"][-1]["content"] == "/usr/local is what?"

    drive(replies, main)


def test_usage_and_cost_are_reported_after_each_model_response_and_each_turn(workspace, tmp_path):
    replies = [
        AssistantMessage(
            [ToolCall("r1", "read", {"path": "a.txt"})], usage=Usage(input_tokens=1000, output_tokens=100)
        ),
        AssistantMessage([Text("Read.")], usage=Usage(input_tokens=2000, output_tokens=500)),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient()
        args = acp_args(fake, tmp_path, "--model", "openai:gpt-4.1")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await client.wait_for(lambda: client.of_kind("usage_update"))
            first = client.of_kind("usage_update")[0]
            assert (first.used, first.size, first.cost) == (0, 0, None)
            await conn.prompt(session_id=session.session_id, prompt=[text_block("read a")])
        usages = client.of_kind("usage_update")
        # The first response's context, then the second's, with the total cost;
        # the turn's end repeats nothing that did not change.
        assert [u.used for u in usages] == [0, 1100, 2500]
        last = usages[-1]
        assert last.cost.currency == "USD" and last.cost.amount == pytest.approx((3000 * 2 + 600 * 8) / 1e6)
        assert last.field_meta["agentrio"]["inputTokens"] == 3000

    drive(replies, main)


def test_session_modes_are_the_permission_modes_and_config_options_set_mode_and_model(workspace, tmp_path):
    replies = [
        AssistantMessage([ToolCall("w1", "write", {"path": "x.txt", "content": "one"})]),
        AssistantMessage([Text("Wrote.")]),
        AssistantMessage([ToolCall("w2", "write", {"path": "y.txt", "content": "two"})]),
        AssistantMessage([Text("Refused.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient()  # no answers: a permission request would fail the test
        args = acp_args(fake, tmp_path, "--model", "openai:gpt-4.1")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            assert session.modes.current_mode_id == "ask"
            assert [m.id for m in session.modes.available_modes] == ["ask", "allow", "read-only"]
            options = {o.id: o for o in session.config_options}
            assert options["mode"].current_value == "ask" and options["mode"].category == "mode"
            assert options["model"].current_value == "openai:gpt-4.1" and options["model"].category == "model"
            assert "openai:gpt-4.1-mini" in [o.value for o in options["model"].options]

            await conn.set_session_mode(session_id=sid, mode_id="allow")
            await client.wait_for(lambda: client.of_kind("current_mode_update"))
            assert client.of_kind("current_mode_update")[-1].current_mode_id == "allow"
            await conn.prompt(session_id=sid, prompt=[text_block("write x")])
            assert (workspace / "x.txt").read_text() == "one"  # not asked

            changed = await conn.set_config_option(config_id="mode", session_id=sid, value="read-only")
            assert {o.id: o.current_value for o in changed.config_options}["mode"] == "read-only"
            changed = await conn.set_config_option(
                config_id="model", session_id=sid, value="openai:gpt-4.1-mini"
            )
            assert {o.id: o.current_value for o in changed.config_options}["model"] == "openai:gpt-4.1-mini"
            await conn.prompt(session_id=sid, prompt=[text_block("write y")])
            assert not (workspace / "y.txt").exists()  # refused, not asked

            with pytest.raises(RequestError) as refused:
                await conn.set_session_mode(session_id=sid, mode_id="yolo")
            assert refused.value.code == -32602
            assert str(refused.value) == "no mode 'yolo'; the modes are ask, allow, read-only"
            with pytest.raises(RequestError) as refused:
                await conn.set_config_option(config_id="colour", session_id=sid, value="red")
            assert "no option 'colour'" in str(refused.value)
        assert client.permission_requests == []
        assert [u.current_mode_id for u in client.of_kind("current_mode_update")] == ["allow", "read-only"]
        assert client.of_kind("config_option_update")
        assert [r.body["model"] for r in fake.requests] == [
            "gpt-4.1",
            "gpt-4.1",
            "gpt-4.1-mini",
            "gpt-4.1-mini",
        ]

    drive(replies, main)


def test_resume_close_and_fork_act_on_the_runtime_sessions(workspace, tmp_path):
    replies = [
        AssistantMessage([Text("First answer.")]),
        AssistantMessage([Text("Answer in the fork.")]),
        AssistantMessage([Text("Answer after resume.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient()
        async with spawn_acp(client, *acp_args(fake, tmp_path), stderr_path=tmp_path / "err") as (conn, _):
            init = await conn.initialize(protocol_version=1)
            capabilities = init.agent_capabilities.session_capabilities
            assert capabilities.resume is not None and capabilities.close is not None
            assert capabilities.fork is not None
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            await conn.prompt(session_id=sid, prompt=[text_block("first")])

            fork = await conn.fork_session(session_id=sid, cwd=str(workspace))
            assert fork.session_id != sid and fork.modes.current_mode_id == "ask"
            await conn.prompt(session_id=fork.session_id, prompt=[text_block("in the fork")])
            # The fork's model request holds the source's history.
            assert [m["content"] for m in fake.requests[1].body["messages"][1:]] == [
                "first",
                "First answer.",
                "in the fork",
            ]

            await conn.close_session(session_id=sid)
            with pytest.raises(RequestError) as closed:
                await conn.prompt(session_id=sid, prompt=[text_block("still there?")])
            assert "no live session" in str(closed.value)

            shown = len(client.updates)
            resumed = await conn.resume_session(session_id=sid, cwd=str(workspace))
            assert resumed.modes.current_mode_id == "ask"
            await conn.prompt(session_id=sid, prompt=[text_block("again")])
            # Resumed without its history: no replayed messages.
            replayed = [u for u in client.updates[shown:] if u.session_update == "user_message_chunk"]
            assert replayed == []
            # Its commands and usage come again, as after session/new and fork.
            kinds = [u.session_update for u in client.updates[shown:]]
            assert "available_commands_update" in kinds and "usage_update" in kinds
        assert len(client.of_kind("available_commands_update")) == 3  # new, fork, resume
        assert [m["content"] for m in fake.requests[2].body["messages"][1:]] == [
            "first",
            "First answer.",
            "again",
        ]

    drive(replies, main)


def test_a_client_gets_no_mode_beyond_what_the_gateway_was_started_with():
    from agentrio.gateway.acp.modes import SessionModes
    from agentrio.tools.permissions import PRESETS, rules

    assert list(SessionModes.of(PRESETS["ask"]).policies) == ["ask", "allow", "read-only"]
    assert list(SessionModes.of(PRESETS["allow"]).policies) == ["ask", "allow", "read-only"]
    only = SessionModes.of(PRESETS["read-only"])
    assert (list(only.policies), only.current) == (["read-only"], "read-only")
    own = SessionModes.of(rules(default="ask"))
    assert (list(own.policies), own.current) == (["configured", "read-only"], "configured")
    assert own.state()["availableModes"][0]["name"] == "As configured"


@pytest.mark.skipif(
    Sandbox.backend() is None, reason="no sandbox mechanism here (.ci/run installs bubblewrap)"
)
def test_the_sandbox_option_makes_commands_stricter_never_looser(workspace, tmp_path):
    replies = [
        AssistantMessage([ToolCall("b1", "bash", {"command": "echo hi > made.txt"})]),
        AssistantMessage([Text("Tried.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = RecordingClient()
        args = acp_args(fake, tmp_path, "--permission", "allow", "--sandbox", "workspace-write")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            (sandbox,) = [o for o in session.config_options if o.id == "sandbox"]
            assert sandbox.current_value == "workspace-write"
            assert [o.value for o in sandbox.options] == ["workspace-write", "read-only"]
            with pytest.raises(RequestError) as looser:
                await conn.set_config_option(config_id="sandbox", session_id=sid, value="off")
            assert "never looser than the gateway's" in str(looser.value)
            await conn.set_config_option(config_id="sandbox", session_id=sid, value="read-only")
            await conn.prompt(session_id=sid, prompt=[text_block("make a file")])
        assert not (workspace / "made.txt").exists()
        end = [u for u in client.of_kind("tool_call_update") if u.tool_call_id == "b1" and u.status][-1]
        assert "Read-only file system" in end.content[-1].content.text
        assert client.of_kind("config_option_update")[-1].config_options[-1].current_value == "read-only"

    drive(replies, main)
