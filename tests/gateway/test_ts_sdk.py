"""``agentrio acp`` driven by the official ACP TypeScript SDK (from npm, its
validation on, see ``ts_sdk/client.mjs``), every message it sends checked
against the official schema."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agentrio.messages import AssistantMessage, Text, ToolCall

from .acp_harness import ROOT, FakeServerThread, acp_args
from .npm_acp import run_ts_client


def agent_command(fake: FakeServerThread, tmp_path: Path, *extra: str) -> list[str]:
    """``agentrio acp`` against the fake model server."""
    return [sys.executable, "-m", "agentrio", "acp", *acp_args(fake, tmp_path, *extra)]


def ts_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "fake"}


def test_the_typescript_sdk_runs_a_prompt_with_a_tool_call(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    replies = [
        AssistantMessage([Text("Looking."), ToolCall("c1", "read", {"path": "a.txt"})]),
        AssistantMessage([Text("It says alpha.")]),
    ]
    with FakeServerThread(replies) as fake:
        report = run_ts_client("prompt.mjs", agent_command(fake, tmp_path), env=ts_env(), cwd=tmp_path)
    assert report["result"]["agent"] == "agentrio"
    assert report["result"]["stopReason"] == "end_turn"
    kinds = [u["update"]["sessionUpdate"] for u in report["updates"]]
    assert "tool_call" in kinds and "agent_message_chunk" in kinds
    statuses = [u["update"].get("status") for u in report["updates"] if u["update"].get("toolCallId") == "c1"]
    assert [s for s in statuses if s] == ["pending", "in_progress", "completed"]


def test_the_typescript_sdk_runs_bash_in_its_terminal_and_cancel_kills_and_releases_it(
    tmp_path: Path,
) -> None:
    replies = [
        AssistantMessage([ToolCall("b1", "bash", {"command": "echo from-ts; exit 2"})]),
        AssistantMessage([Text("It exited with 2.")]),
        AssistantMessage([ToolCall("b2", "bash", {"command": "sleep 30"})]),
    ]
    with FakeServerThread(replies) as fake:
        agent = agent_command(fake, tmp_path, "--sandbox", "off", "--permission", "allow")
        report = run_ts_client("terminal.mjs", agent, env=ts_env(), cwd=tmp_path)
        model_saw = fake.requests[1].body["messages"][-1]["content"]
    result = report["result"]
    assert (result["first"], result["second"]) == ("end_turn", "cancelled")
    cwd = str(tmp_path)
    assert result["calls"] == [
        ["create", "bash", ["-c", "echo from-ts; exit 2"], cwd, 60_000],
        ["wait_for_exit", "ts-term-1"],
        ["output", "ts-term-1"],
        ["release", "ts-term-1"],
        ["create", "bash", ["-c", "sleep 30"], cwd, 60_000],
        ["wait_for_exit", "ts-term-2"],
        ["kill", "ts-term-2"],
        ["release", "ts-term-2"],
    ]
    assert model_saw == "from-ts\n[exit code 2]"
    # Shown live in the editor's terminal, and still after the call ended.
    assert result["embedded"] == [["ts-term-1", "ts-term-1"], ["ts-term-2", "ts-term-2"]]
    assert result["aliveBefore"] and not result["aliveAfter"] and result["open"] == 0


def test_the_typescript_sdk_switches_modes_and_sees_them_apply(tmp_path: Path) -> None:
    replies = [
        AssistantMessage([ToolCall("w1", "write", {"path": "x.txt", "content": "one"})]),
        AssistantMessage([Text("Wrote x.")]),
        AssistantMessage([ToolCall("w2", "write", {"path": "y.txt", "content": "two"})]),
        AssistantMessage([Text("Could not write y.")]),
    ]
    with FakeServerThread(replies) as fake:
        report = run_ts_client("modes.mjs", agent_command(fake, tmp_path), env=ts_env(), cwd=tmp_path)
    result = report["result"]
    assert result["modes"]["currentModeId"] == "ask"
    assert [m["id"] for m in result["modes"]["availableModes"]] == ["ask", "allow", "read-only"]
    assert result["configOptions"][:2] == [["mode", "ask"], ["model", "openai:fake"]]
    assert {"compact", "model", "mode", "fork", "cost"} <= set(result["commands"])
    assert result["modeUpdates"] == ["allow", "read-only"]
    assert result["optionsAfter"][:2] == [["mode", "read-only"], ["model", "openai:fake"]]
    assert result["stopReasons"] == ["end_turn", "end_turn"]
    assert report["notes"] == []  # never asked: allow ran it, read-only refused it
    assert (tmp_path / "x.txt").read_text() == "one" and not (tmp_path / "y.txt").exists()
    ends = {
        u["update"]["toolCallId"]: u["update"]["status"]
        for u in report["updates"]
        if u["update"].get("status") in ("completed", "failed")
    }
    assert ends == {"w1": "completed", "w2": "failed"}
    # The messages the SDK refused would be in report["errors"] (run_ts_client fails on any).
    assert any(e["message"].get("method") == "session/set_mode" for e in report["transcript"])
