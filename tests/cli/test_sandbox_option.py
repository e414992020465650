"""``--sandbox``: the tools' commands of ``run``, ``chat``, ``acp`` and
``serve`` run sandboxed by default where a mechanism works."""

from __future__ import annotations

import pytest

from agentrio.cli import build_parser
from agentrio.cli.errors import CommandError
from agentrio.cli.options import resolve_sandbox
from agentrio.messages import AssistantMessage, Text, ToolCall
from agentrio.tools.sandbox import Sandbox

pytestmark = pytest.mark.skipif(Sandbox.backend() is None, reason="no sandbox mechanism works here")


async def test_run_sandboxes_bash_to_the_workspace_by_default_and_says_so(cli, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    command = f"echo x > {outside}/f; echo y > inside"
    cli.server.add(
        AssistantMessage([ToolCall("c1", "bash", {"command": command})]), AssistantMessage([Text("Done.")])
    )
    done = await cli.run("run", "Write.", "--permission", "allow")
    assert done.returncode == 0, done.stderr.decode()
    assert f"agentrio: sandbox workspace-write ({Sandbox.backend()}, no network" in done.stderr.decode()
    result = cli.server.requests[1].body["messages"][-1]["content"]
    assert f"{outside}/f: " in result
    assert not (outside / "f").exists() and (cli.workspace / "inside").exists()

    cli.server.add(
        AssistantMessage([ToolCall("c1", "bash", {"command": command})]), AssistantMessage([Text("Done.")])
    )
    done = await cli.run("run", "Write.", "--permission", "allow", "--sandbox", "off")
    assert "agentrio: sandbox off" in done.stderr.decode()
    assert (outside / "f").exists()


def test_read_only_permission_implies_a_read_only_sandbox():
    sandbox, line = resolve_sandbox(None, "read-only")
    assert sandbox == Sandbox("read-only") and "sandbox read-only" in line
    assert resolve_sandbox(None, "allow")[0] == Sandbox("workspace-write")
    assert resolve_sandbox("off", "read-only")[0] is None  # an explicit choice stands


def test_without_a_mechanism_the_default_is_off_with_a_warning_and_a_choice_is_refused(monkeypatch):
    monkeypatch.setattr(Sandbox, "backend", classmethod(lambda cls: None))
    sandbox, line = resolve_sandbox(None, "ask")
    assert sandbox is None and line.startswith("warning: no sandbox here")
    with pytest.raises(CommandError, match="no sandbox mechanism works here"):
        resolve_sandbox("workspace-write", "ask")


@pytest.mark.parametrize("command", ["run", "chat", "acp", "serve"])
def test_every_command_that_runs_tools_takes_the_option(command):
    args = ["run", "x"] if command == "run" else [command]
    assert build_parser().parse_args([*args, "--sandbox", "read-only"]).sandbox == "read-only"


async def test_chat_says_its_sandbox_under_its_header(cli):
    term = cli.spawn("chat", "--permission", "read-only")
    await term.expect_text("/help for help")
    await term.expect_text(f"sandbox read-only ({Sandbox.backend()}, no network")
    term.type_line("/quit")
    assert await term.wait() == 0


def test_agentrio_toml_may_set_the_sandbox_and_the_command_line_wins(tmp_path, monkeypatch):
    from agentrio.cli.options import Settings

    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentrio.toml").write_text('sandbox = "read-only"\n')

    def load(*argv: str) -> Settings:
        return Settings.load(build_parser().parse_args(["run", "x", *argv]), {})

    assert load().sandbox == "read-only"
    assert load("--sandbox", "off").sandbox == "off"
    (tmp_path / "agentrio.toml").write_text('sandbox = "none"\n')
    with pytest.raises(CommandError, match="sandbox must be one of read-only, workspace-write, off"):
        resolve_sandbox(load().sandbox, "ask")


def test_acp_and_serve_sessions_get_coding_tools_in_the_sandbox(tmp_path, monkeypatch):
    from agentrio.gateway import AgentFactory

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    factory = AgentFactory("openai:gpt-4.1", None, "allow", None, Sandbox("read-only"))
    factory.check()
    bash = next(t for t in factory(tmp_path).tools if t.name == "bash")
    assert "may write only in $TMPDIR and have no network" in bash.description
    unsandboxed = next(t for t in AgentFactory("openai:gpt-4.1")(tmp_path).tools if t.name == "bash")
    assert "sandbox" not in unsandboxed.description
