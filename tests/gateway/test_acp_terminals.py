"""``bash`` through the client's terminals: an official-SDK client that runs
each command for real (a process group of its own), driven against
``agentrio acp`` over real pipes."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, schema, text_block

from agentrio.messages import AssistantMessage, Text, ToolCall
from agentrio.tools.sandbox import Sandbox

from ..tools.processes import assert_all_gone, running
from .acp_harness import FakeServerThread, RecordingClient, acp_args, drive, spawn_acp

TERMINALS = schema.ClientCapabilities(terminal=True)


class TerminalClient(RecordingClient):
    """Runs the agent's commands as an editor would: each in a process of
    its own, output kept to the byte limit (its end), killed as a group.
    ``log`` holds every terminal request and permission request in order."""

    def __init__(
        self, answers: list[str] = (), refuse: str | None = None, gate: asyncio.Event | None = None
    ) -> None:
        super().__init__(answers)
        self.refuse = refuse
        #: Set when terminals may be made: until then terminal/create waits.
        self.gate = gate
        self.log: list[tuple[str, Any]] = []
        self.created: list[dict[str, Any]] = []
        self.terminals: dict[str, dict[str, Any]] = {}
        self.told_at_create: list[dict[str, list[str]]] = []

    async def request_permission(self, options, session_id, tool_call, **kwargs):
        self.log.append(("permission", tool_call.tool_call_id))
        return await super().request_permission(options, session_id, tool_call, **kwargs)

    async def create_terminal(
        self, command, session_id, args=None, cwd=None, env=None, output_byte_limit=None, **kw
    ):
        self.log.append(("create", command))
        # What the editor had been told of each call when asked for its terminal.
        self.told_at_create.append(
            {
                u.tool_call_id: self.statuses(u.tool_call_id)
                for u in self.updates
                if u.session_update == "tool_call"
            }
        )
        self.created.append({"command": command, "args": args, "cwd": cwd, "limit": output_byte_limit})
        if self.refuse:
            raise RequestError(-32000, self.refuse)
        if self.gate is not None:
            await self.gate.wait()
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        terminal_id = f"term-{len(self.created)}"
        terminal = {"process": process, "output": b"", "limit": output_byte_limit, "truncated": False}
        terminal["reader"] = asyncio.ensure_future(self._read(terminal))
        self.terminals[terminal_id] = terminal
        return schema.CreateTerminalResponse(terminal_id=terminal_id)

    async def _read(self, terminal: dict[str, Any]) -> None:
        while chunk := await terminal["process"].stdout.read(4096):
            output = terminal["output"] + chunk
            if terminal["limit"] is not None and len(output) > terminal["limit"]:
                output, terminal["truncated"] = output[-terminal["limit"] :], True
            terminal["output"] = output

    def _status(self, terminal: dict[str, Any]) -> schema.TerminalExitStatus | None:
        code = terminal["process"].returncode
        if code is None:
            return None
        if code < 0:
            return schema.TerminalExitStatus(signal=signal.Signals(-code).name)
        return schema.TerminalExitStatus(exit_code=code)

    async def wait_for_terminal_exit(self, session_id, terminal_id, **kwargs):
        self.log.append(("wait_for_exit", terminal_id))
        terminal = self.terminals[terminal_id]
        await terminal["process"].wait()
        status = self._status(terminal)
        return schema.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def terminal_output(self, session_id, terminal_id, **kwargs):
        self.log.append(("output", terminal_id))
        terminal = self.terminals[terminal_id]
        if terminal["process"].returncode is not None:
            await terminal["reader"]
        return schema.TerminalOutputResponse(
            output=terminal["output"].decode(errors="replace"),
            truncated=terminal["truncated"],
            exit_status=self._status(terminal),
        )

    async def kill_terminal(self, session_id, terminal_id, **kwargs):
        self.log.append(("kill", terminal_id))
        self._kill(self.terminals[terminal_id])
        await self.terminals[terminal_id]["process"].wait()
        return schema.KillTerminalResponse()

    async def release_terminal(self, session_id, terminal_id, **kwargs):
        self.log.append(("release", terminal_id))
        terminal = self.terminals.pop(terminal_id)
        self._kill(terminal)
        await terminal["process"].wait()
        return schema.ReleaseTerminalResponse()

    def _kill(self, terminal: dict[str, Any]) -> None:
        if terminal["process"].returncode is None:
            os.killpg(terminal["process"].pid, signal.SIGKILL)

    def terminal_contents(self, call_id: str) -> list[list[Any]]:
        """The content of each update of ``call_id`` that embeds a terminal."""
        return [
            [c.terminal_id for c in u.content if c.type == "terminal"]
            for u in self.updates
            if u.session_update == "tool_call_update" and u.tool_call_id == call_id and u.content
            if any(c.type == "terminal" for c in u.content)
        ]


def children(pid: int) -> list[int]:
    """The live child processes of ``pid``."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return [c for c in found if running(c)]


def test_bash_runs_in_the_clients_terminal_after_permission_and_the_editor_embeds_it(tmp_path):
    workspace = tmp_path / "work"
    workspace.mkdir()
    command = "echo out; echo err >&2; pwd > where.txt; exit 3"
    replies = [
        AssistantMessage([Text("Running."), ToolCall("b1", "bash", {"command": command})]),
        AssistantMessage([Text("It failed with 3.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = TerminalClient(["allow-once"])
        args = acp_args(fake, tmp_path, "--sandbox", "off")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=TERMINALS)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("run it")])
            assert response.stop_reason == "end_turn"
        # Asked first; then one terminal, waited for, read, released.
        assert client.log == [
            ("permission", "b1"),
            ("create", "bash"),
            ("wait_for_exit", "term-1"),
            ("output", "term-1"),
            ("release", "term-1"),
        ]
        assert client.created == [
            {"command": "bash", "args": ["-c", command], "cwd": str(workspace), "limit": 60_000}
        ]
        assert (workspace / "where.txt").read_text() == f"{workspace}\n"
        # The terminal is embedded while it runs and stays in the final content.
        assert client.terminal_contents("b1") == [["term-1"], ["term-1"]]
        assert client.statuses("b1") == ["pending", "in_progress", "failed"]
        end = [u for u in client.of_kind("tool_call_update") if u.tool_call_id == "b1" and u.status][-1]
        assert end.content[1].content.text == "out\nerr\n[exit code 3]"
        assert end.raw_output["exit_code"] == 3 and end.raw_output["timed_out"] is False
        # The model read the terminal's output.
        assert fake.requests[1].body["messages"][-1]["content"] == "out\nerr\n[exit code 3]"

    drive(replies, main)


def test_each_call_is_announced_to_the_editor_before_its_terminal_is_asked_for(tmp_path):
    # Without a permission request in between, the call's command is ready
    # at once: its terminal/create must still come after its tool_call and
    # its in_progress, so that the editor has a call to embed it in.
    calls = [ToolCall(f"b{i}", "bash", {"command": f"echo {i}"}) for i in range(4)]
    replies = [AssistantMessage([Text("Running."), *calls]), AssistantMessage([Text("Done.")])]

    async def main(fake: FakeServerThread) -> None:
        client = TerminalClient()
        args = acp_args(fake, tmp_path, "--sandbox", "off", "--permission", "allow")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=TERMINALS)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("run them")])
            assert response.stop_reason == "end_turn"
        # The terminal of `echo i` is asked for once call bi is announced and running.
        asked = [created["args"][1].removeprefix("echo ") for created in client.created]
        assert sorted(asked) == ["0", "1", "2", "3"]
        for i, told in zip(asked, client.told_at_create, strict=True):
            assert told[f"b{i}"] == ["pending", "in_progress"], (i, told)

    drive(replies, main)


def test_a_command_past_its_time_limit_is_killed_through_the_client_and_released(tmp_path):
    workspace = tmp_path / "work"
    workspace.mkdir()
    replies = [
        AssistantMessage([ToolCall("b1", "bash", {"command": "echo started; sleep 30", "timeout": 0.5})]),
        AssistantMessage([Text("It took too long.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = TerminalClient()
        args = acp_args(fake, tmp_path, "--sandbox", "off", "--permission", "allow")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=TERMINALS)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("run it")])
            assert response.stop_reason == "end_turn"
        assert [m for m, _ in client.log] == ["create", "wait_for_exit", "kill", "output", "release"]
        assert client.terminals == {}
        said = (tmp_path / "err").read_text()
        assert "sandbox off: commands run with all your rights; bash runs in the editor's terminal" in said
        result = fake.requests[1].body["messages"][-1]["content"]
        assert result.startswith("started\n[timed out after 0.") and result.endswith("s and was stopped]")

    drive(replies, main)


def test_cancel_mid_command_kills_and_releases_the_terminal_and_leaves_nothing_running(tmp_path):
    workspace = tmp_path / "work"
    workspace.mkdir()
    replies = [
        AssistantMessage([ToolCall("b1", "bash", {"command": "sleep 30 & echo $! > sleeper.pid; wait"})]),
        AssistantMessage([Text("Awake again.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = TerminalClient()
        args = acp_args(fake, tmp_path, "--sandbox", "off", "--permission", "allow")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, check):
            await conn.initialize(protocol_version=1, client_capabilities=TERMINALS)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            prompt = asyncio.ensure_future(
                conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
            )
            await client.wait_for(lambda: client.terminal_contents("b1") != [])
            pid_file = workspace / "sleeper.pid"
            while not (pid_file.exists() and pid_file.read_text().strip()):
                await asyncio.sleep(0.01)
            shell = client.terminals["term-1"]["process"].pid
            sleeper = int(pid_file.read_text())
            assert running(shell) and running(sleeper)
            await conn.cancel(session_id=session.session_id)
            assert (await prompt).stop_reason == "cancelled"
            assert client.log[-2:] == [("kill", "term-1"), ("release", "term-1")]
            assert_all_gone([shell, sleeper])
            # Nothing of the agent's runs the command: it has no process left at all.
            assert children(check.process.pid) == []
            assert client.statuses("b1") == ["pending", "in_progress", "failed"]
            again = await conn.prompt(session_id=session.session_id, prompt=[text_block("wake up")])
            assert again.stop_reason == "end_turn"
        assert client.text().endswith("Awake again.")

    drive(replies, main)


def test_a_cancel_while_the_terminal_is_being_made_still_kills_and_releases_it(tmp_path):
    workspace = tmp_path / "work"
    workspace.mkdir()
    replies = [AssistantMessage([ToolCall("b1", "bash", {"command": "sleep 30"})])]

    async def main(fake: FakeServerThread) -> None:
        made = asyncio.Event()
        client = TerminalClient(gate=made)
        args = acp_args(fake, tmp_path, "--sandbox", "off", "--permission", "allow")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=TERMINALS)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            prompt = asyncio.ensure_future(
                conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
            )
            await client.wait_for(lambda: client.log != [])
            await conn.cancel(session_id=session.session_id)
            made.set()  # its answer follows the cancel on the wire
            assert (await prompt).stop_reason == "cancelled"
            assert client.log == [("create", "bash"), ("kill", "term-1"), ("release", "term-1")]
            assert client.terminals == {}

    drive(replies, main)


def test_a_client_that_refuses_terminal_create_fails_the_call_and_nothing_runs_here(tmp_path):
    workspace = tmp_path / "work"
    workspace.mkdir()
    replies = [
        AssistantMessage([ToolCall("b1", "bash", {"command": "touch ran-here"})]),
        AssistantMessage([Text("The editor said no.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = TerminalClient(refuse="terminals are disabled in this editor")
        args = acp_args(fake, tmp_path, "--sandbox", "off", "--permission", "allow")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=TERMINALS)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("touch")])
            assert response.stop_reason == "end_turn"
        assert client.statuses("b1") == ["pending", "in_progress", "failed"]
        assert not (workspace / "ran-here").exists()
        assert fake.requests[1].body["messages"][-1]["content"] == (
            "the editor could not run the command: terminals are disabled in this editor"
        )

    drive(replies, main)


@pytest.mark.skipif(Sandbox.backend() is None, reason="no sandbox mechanism here (install bubblewrap)")
def test_with_a_sandbox_commands_stay_here_confined_even_when_the_client_offers_terminals(tmp_path):
    workspace = tmp_path / "work"
    workspace.mkdir()
    replies = [
        AssistantMessage(
            [ToolCall("b1", "bash", {"command": "touch inside; touch /tmp/outside-$$ || echo refused"})]
        ),
        AssistantMessage([Text("Done.")]),
    ]

    async def main(fake: FakeServerThread) -> None:
        client = TerminalClient()
        args = acp_args(fake, tmp_path, "--sandbox", "workspace-write", "--permission", "allow")
        async with spawn_acp(client, *args, stderr_path=tmp_path / "err") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=TERMINALS)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text_block("touch")])
        assert client.log == [] and (workspace / "inside").exists()
        said = (tmp_path / "err").read_text()
        assert "bash runs here, in the sandbox, even when the editor offers terminals" in said
        assert "refused" in fake.requests[1].body["messages"][-1]["content"]

    drive(replies, main)
