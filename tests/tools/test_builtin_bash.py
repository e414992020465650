import signal

import pytest
import trio

from agentrio import AgentSpec, Runtime, ScriptedModel
from agentrio.tools.builtin import bash
from tests.helpers import calls, say, start_run
from tests.tools.processes import (
    assert_all_gone,
    processes_with,
    unique_duration,
    wait_for_sleeper,
    zombie_children,
)


async def test_runs_in_the_root_and_returns_the_output(workspace, call):
    result = await call(bash(workspace), command="pwd; echo oops >&2")
    assert not result.is_error
    assert result.content == f"{workspace}\n[stderr]\noops"
    assert result.details["exit_code"] == 0


async def test_a_non_zero_exit_is_an_error_with_the_output(workspace, call):
    result = await call(bash(workspace), command="echo partial; exit 3")
    assert result.is_error
    assert result.content == "partial\n[exit code 3]"
    assert result.details["exit_code"] == 3


async def test_no_output(workspace, call):
    assert (await call(bash(workspace), command="true")).content == "(no output)"


async def test_output_streams_as_progress(workspace, call, reports):
    await call(bash(workspace), command="echo one; sleep 0.1; echo two >&2")
    assert reports == [{"stream": "stdout", "text": "one\n"}, {"stream": "stderr", "text": "two\n"}]


async def test_a_time_out_stops_the_command(workspace, call):
    result = await call(bash(workspace, grace=0.2), command="echo started; sleep 1000", timeout=0.3)
    assert result.is_error
    assert result.content.startswith("started\n[timed out after ")
    assert result.details["timed_out"] and result.details["signal"] == signal.SIGTERM


async def test_huge_output_is_capped_with_a_note(workspace, call):
    result = await call(bash(workspace, output_cap=2000), command="seq 1 100000")
    assert len(result.content) < 2200
    assert result.content.startswith("1\n2\n") and result.content.endswith("\n100000")
    assert "cut here" in result.content and result.details["truncated"]


async def test_cancelling_the_call_stops_the_command(workspace, call):
    pid_file = workspace / "pid"
    with trio.move_on_after(0.5):
        await call(bash(workspace, grace=0.2), command=f"echo $$ > {pid_file}; sleep 1000")
    pid = int(pid_file.read_text())
    with trio.fail_after(5):
        while await trio.Path(f"/proc/{pid}").exists():
            await trio.sleep(0.01)


def test_the_time_limit_has_a_default_and_a_maximum(workspace):
    tool = bash(workspace, default_timeout=10, max_timeout=60)
    assert tool.parameters["properties"]["timeout"]["default"] == 10
    assert tool.argument_errors({"command": "true", "timeout": 61}) == [
        "timeout: 61 is greater than the maximum of 60"
    ]
    assert tool.argument_errors({"command": "true", "timeout": 0}) != []


def test_bash_is_exclusive(workspace):
    assert bash(workspace).mode_for({"command": "ls"}) == "exclusive"


@pytest.mark.parametrize(
    "command",
    [
        "timeout 1000 sleep {marker}; echo done",
        "set -m; sleep {marker} & wait",
        "setsid sleep {marker} & wait",
    ],
    ids=["timeout", "job-control", "setsid"],
)
async def test_cancelling_the_agent_stops_commands_that_left_the_group(workspace, command):
    marker = unique_duration()
    model = ScriptedModel([calls(("bash", {"command": command.format(marker=marker)})), say("next")])
    with trio.fail_after(20):
        async with Runtime() as rt:
            agent = await rt.create(AgentSpec("a", model, tools=[bash(workspace, grace=0.2)]))
            async with trio.open_nursery() as nursery:
                results = start_run(nursery, agent, "go")
                await wait_for_sleeper(marker)
                await agent.cancel()
                await agent.wait_idle()
    assert results[0].stop_reason == "aborted"
    assert_all_gone(processes_with(marker))
    assert zombie_children() == []
