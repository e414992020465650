"""Supervised subprocesses, with real processes: output, limits, clean-up."""

import os
import signal
import sys
from pathlib import Path

import pytest
import trio

from agentrio.tools.process import run_process, supervised
from tests.tools.processes import (
    assert_all_gone,
    processes_with,
    unique_duration,
    wait_for_sleeper,
    zombie_children,
)

GRACE = 0.2


def assert_reaped(pid: int) -> None:
    """``pid`` was our child and nothing is left of it: not even a zombie."""
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert not Path(f"/proc/{pid}").exists()


def assert_cleaned_up(pid_file: Path, grandchildren: int) -> None:
    """The shell whose pid is first in ``pid_file`` was reaped, and none of
    the processes it started (the other pids) still runs."""
    leader, *started = [int(line) for line in pid_file.read_text().split()]
    assert len(started) == grandchildren
    assert_all_gone(started)
    assert_reaped(leader)


# A shell that records its own pid and those of two background sleepers, then
# waits for them: the sleepers are grandchildren of the runner.
SLEEPERS = "echo $$ >> {pids}; sleep 1000 & echo $! >> {pids}; sleep 1000 & echo $! >> {pids}; wait"
# The same with one sleeper, both ignoring SIGTERM.
STUBBORN = "trap '' TERM; echo $$ >> {pids}; sleep 1000 & echo $! >> {pids}; wait"


async def wait_for_lines(path: Path, count: int) -> None:
    while not path.exists() or len(path.read_text().split()) < count:
        await trio.sleep(0.01)


async def test_output_and_exit_status(tmp_path):
    result = await run_process("echo out; echo err >&2; exit 3", cwd=tmp_path)
    assert (result.stdout, result.stderr) == ("out\n", "err\n")
    assert (result.exit_code, result.signal, result.timed_out) == (3, None, False)
    assert not result.ok
    assert result.status == "exit code 3"


async def test_argument_list_runs_without_a_shell(tmp_path):
    result = await run_process([sys.executable, "-c", "import os; print(os.getcwd())"], cwd=tmp_path)
    assert result.ok
    assert result.command == (sys.executable, "-c", "import os; print(os.getcwd())")
    assert result.stdout.strip() == str(tmp_path)


async def test_stdin_is_fed_then_closed(tmp_path):
    result = await run_process("cat", cwd=tmp_path, stdin="hello\n")
    assert result.stdout == "hello\n"


async def test_without_stdin_the_command_reads_nothing(tmp_path):
    result = await run_process("cat", cwd=tmp_path, timeout=5)
    assert result.ok and result.stdout == ""


async def test_output_is_streamed_in_order(tmp_path):
    chunks = []
    script = "echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three"
    result = await run_process(script, cwd=tmp_path, on_output=lambda s, t: chunks.append((s, t)))
    assert chunks == [("stdout", "one\n"), ("stderr", "two\n"), ("stdout", "three\n")]
    assert result.stdout == "one\nthree\n"


async def test_a_character_split_across_writes_is_never_split_in_the_stream(tmp_path):
    code = (
        "import os, time\n"
        "data = 'é€'.encode()\n"
        "for i in range(len(data)):\n"
        "    os.write(1, data[i:i + 1]); time.sleep(0.02)\n"
    )
    chunks = []
    result = await run_process(
        [sys.executable, "-c", code], cwd=tmp_path, on_output=lambda s, t: chunks.append(t)
    )
    assert result.stdout == "é€"
    assert "".join(chunks) == "é€"
    assert all("\ufffd" not in c for c in chunks)


async def test_huge_output_keeps_head_and_tail_with_a_note(tmp_path):
    code = "for i in range(100_000): print(f'line {i}')"
    result = await run_process([sys.executable, "-c", code], cwd=tmp_path, output_cap=1000)
    assert result.ok and result.truncated
    assert result.stdout.startswith("line 0\nline 1\n")
    assert result.stdout.endswith("line 99999\n")
    assert "characters" in result.stdout and "cut here" in result.stdout
    assert len(result.stdout) < 1200


async def test_time_out_stops_the_command_and_its_grandchildren(tmp_path):
    pids = tmp_path / "pids"
    result = await run_process(SLEEPERS.format(pids=pids), cwd=tmp_path, timeout=0.5, grace=GRACE)
    assert result.timed_out and not result.ok
    assert result.signal == signal.SIGTERM
    assert "timed out" in result.status
    assert_cleaned_up(pids, grandchildren=2)


async def test_cancel_stops_the_command_and_its_grandchildren(tmp_path):
    pids = tmp_path / "pids"
    with trio.move_on_after(10) as deadline:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: run_process(SLEEPERS.format(pids=pids), cwd=tmp_path, grace=GRACE))
            await wait_for_lines(pids, 3)
            nursery.cancel_scope.cancel()
    assert not deadline.cancelled_caught
    assert_cleaned_up(pids, grandchildren=2)


@pytest.mark.parametrize("redirect", ["", ">/dev/null 2>&1"], ids=["holding-the-pipes", "detached-output"])
async def test_background_children_do_not_survive_a_normal_exit(tmp_path, redirect):
    pids = tmp_path / "pids"
    script = f"echo $$ >> {pids}; sleep 1000 {redirect} & echo $! >> {pids}; echo done"
    with trio.fail_after(10):
        result = await run_process(script, cwd=tmp_path, grace=GRACE)
    assert result.ok and result.stdout == "done\n"
    assert_cleaned_up(pids, grandchildren=1)


async def test_sigterm_comes_first(tmp_path):
    marker = tmp_path / "terminated"
    script = f"trap 'echo term > {marker}; echo cleaning up; exit 7' TERM; sleep 1000 & wait"
    result = await run_process(script, cwd=tmp_path, timeout=0.5, grace=5)
    assert result.timed_out
    assert marker.read_text() == "term\n"
    assert result.exit_code == 7
    assert result.stdout == "cleaning up\n"  # what it wrote while stopping is kept
    assert result.duration < 4  # it did not take the grace period and a SIGKILL


async def test_sigkill_follows_when_sigterm_is_ignored(tmp_path):
    pids = tmp_path / "pids"
    result = await run_process(STUBBORN.format(pids=pids), cwd=tmp_path, timeout=0.5, grace=GRACE)
    assert result.timed_out
    assert result.signal == signal.SIGKILL
    assert_cleaned_up(pids, grandchildren=1)


async def test_cancel_waits_for_the_grace_period_then_kills(tmp_path):
    pids = tmp_path / "pids"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: run_process(STUBBORN.format(pids=pids), cwd=tmp_path, grace=GRACE))
        await wait_for_lines(pids, 2)
        nursery.cancel_scope.cancel()
    assert_cleaned_up(pids, grandchildren=1)


async def test_context_reports_output_as_progress(tmp_path, ctx, reports):
    result = await ctx.run_process("echo a; sleep 0.1; echo b >&2", cwd=tmp_path)
    assert result.ok
    assert reports == [{"stream": "stdout", "text": "a\n"}, {"stream": "stderr", "text": "b\n"}]


# bash commands whose sleeper leaves the shell's process group or its tree:
# each holds the placeholder {marker}, a duration no other process uses.
ESCAPING = {
    "timeout": "timeout 1000 sleep {marker}; echo done",
    "job-control": "set -m; sleep {marker} & wait",
    "setsid": "setsid sleep {marker} & wait",
    "orphaned-setsid": "(setsid sleep {marker} &); sleep 1000",
    "daemon": "setsid sh -c 'sleep {marker} & exit' & sleep 1000",
}


@pytest.mark.parametrize("script", ESCAPING.values(), ids=ESCAPING.keys())
async def test_time_out_stops_processes_that_left_the_group(tmp_path, script):
    marker = unique_duration()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_for_sleeper, marker)  # it did start, and escape
            command = ["bash", "-c", script.format(marker=marker)]
            result = await run_process(command, cwd=tmp_path, timeout=2, grace=GRACE)
    assert result.timed_out
    assert processes_with(marker) == []
    assert zombie_children() == []


@pytest.mark.parametrize("script", ESCAPING.values(), ids=ESCAPING.keys())
async def test_cancel_stops_processes_that_left_the_group(tmp_path, script):
    marker = unique_duration()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            command = ["bash", "-c", script.format(marker=marker)]
            nursery.start_soon(lambda: run_process(command, cwd=tmp_path, grace=GRACE))
            await wait_for_sleeper(marker)
            nursery.cancel_scope.cancel()
    assert processes_with(marker) == []
    assert zombie_children() == []


async def test_background_processes_that_left_the_group_do_not_survive_a_normal_exit(tmp_path):
    marker = unique_duration()
    script = f"setsid sleep {marker} >/dev/null 2>&1 & set -m; sleep {marker} & sleep 0.5; echo done"
    with trio.fail_after(10):
        result = await run_process(script, cwd=tmp_path, grace=GRACE)
    assert result.ok and result.stdout == "done\n"
    assert processes_with(marker) == []
    assert zombie_children() == []


async def test_a_sigterm_ignoring_escapee_is_killed_after_the_grace_period(tmp_path):
    marker = unique_duration()
    script = f"setsid sh -c \"trap '' TERM; sleep {marker}; :\" & wait"
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_for_sleeper, marker)
            result = await run_process(script, cwd=tmp_path, timeout=1, grace=GRACE)
    assert result.timed_out
    assert processes_with(marker) == []


async def test_a_program_that_cannot_start_raises_as_before(tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        await run_process(["./no-such-program"], cwd=tmp_path)
    assert raised.value.filename == "./no-such-program"
    assert zombie_children() == []


async def test_the_environment_is_replaced_for_the_command(tmp_path):
    result = await run_process("echo $ONLY; env | wc -l", cwd=tmp_path, env={"ONLY": "this"})
    assert result.ok
    first, count = result.stdout.split()
    assert first == "this" and int(count) <= 4  # sh may add PWD, SHLVL, _


async def test_if_the_shim_is_killed_its_process_group_is_killed_instead(tmp_path):
    marker = unique_duration()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:

            async def kill_the_shim():
                await wait_for_sleeper(marker)
                (shim,) = [
                    p
                    for p in processes_with(marker)
                    if b"_reaper.py" in Path(f"/proc/{p}/cmdline").read_bytes()
                ]
                os.kill(shim, signal.SIGKILL)

            nursery.start_soon(kill_the_shim)
            result = await run_process(f"sleep {marker} & wait", cwd=tmp_path, grace=GRACE)
    assert result.signal == signal.SIGKILL
    assert_all_gone(processes_with(marker))
    assert zombie_children() == []


async def _kill_the_runner_of(command: str, marker: str, *, running_for: float = 0.0) -> None:
    """Run ``command`` through ``run_process`` in a process of its own,
    then SIGKILL that process once ``marker``'s sleep is up (and
    ``running_for`` more seconds): nothing the command started may remain."""
    host = (
        f"import trio\nfrom agentrio.tools.process import run_process\ntrio.run(run_process, {command!r})\n"
    )
    root = Path(__file__).resolve().parents[2]
    process = await trio.lowlevel.open_process([sys.executable, "-c", host], cwd=root)
    try:
        with trio.fail_after(20):
            await wait_for_sleeper(marker)
        await trio.sleep(running_for)
    finally:
        process.kill()
        await process.wait()
    assert_all_gone(processes_with(marker))


async def test_a_command_does_not_outlive_a_runner_killed_outright(tmp_path):
    marker = unique_duration()
    await _kill_the_runner_of(f"sleep {marker} & wait", marker)


async def test_a_command_does_not_outlive_a_runner_killed_outright_while_its_processes_keep_ending(tmp_path):
    # Orphans re-parented to the shim end every 0.1 s: its SIGCHLDs come
    # more often than its quiet-time check of the runner.
    marker = unique_duration()
    command = f"while :; do (sleep 0.05 &); sleep 0.1; done & sleep {marker}"
    await _kill_the_runner_of(command, marker, running_for=0.3)  # the loop is running


async def test_a_command_never_starts_when_its_runner_died_before_the_shim_looked(tmp_path):
    # The shim is told its runner's pid; here the runner named is not its
    # parent, as when the runner was killed before the shim's first line ran.
    flag = tmp_path / "ran"
    argv = supervised(["touch", str(flag)], GRACE)
    runner = argv.index("--") - 2  # before the policy
    argv[runner] = str(os.getpid() + 1_000_000)  # no such process
    shim = await trio.run_process(argv, check=False)
    assert shim.returncode == 0
    assert not flag.exists()
    # Told its real runner, the same shim runs the command.
    await trio.run_process(supervised(["touch", str(flag)], GRACE))
    assert flag.exists()
