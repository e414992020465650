"""``agentrio worker``: a worker killed mid-turn, or stopped, loses nothing:
another runtime continues the turn it cut, and its input gets a real answer."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import psycopg
import trio

from agentrio import (
    TOOL_OUTCOME_UNKNOWN,
    AgentSpec,
    AssistantMessage,
    Outcome,
    PostgresStore,
    Runtime,
    ScriptedModel,
    Text,
    ToolResultMessage,
)

from .chaos_spec import work
from .workers import ROOT, ready, start_worker

LEASE = 2.0


async def tool_started(log, worker: trio.Process) -> None:
    with trio.fail_after(30):
        while not (log.exists() and any(line.startswith("T ") for line in log.read_text().splitlines())):
            assert worker.poll() is None, "the worker ended"
            await trio.sleep(0.05)


def turn_ends(dsn: str, session_id: str) -> list[tuple[str, str | None]]:
    from agentrio.journal.codec import decode_record

    with psycopg.connect(dsn, autocommit=True, options="-c search_path=agentrio") as conn:
        rows = conn.execute(
            "SELECT data FROM records WHERE session_id = %s AND kind = 'turn_ended' ORDER BY seq",
            (session_id,),
        ).fetchall()
    return [(r.stop_reason, r.cancel_cause) for r in (decode_record(data) for (data,) in rows)]


async def continue_elsewhere(dsn: str, input_id: str, lease: float) -> tuple[Outcome, ScriptedModel]:
    model = ScriptedModel([AssistantMessage([Text("done after all")])])
    async with Runtime(PostgresStore(dsn, lease=lease)) as rt, PostgresStore(dsn, lease=lease) as client:
        await rt.nursery.start(rt.serve, [AgentSpec("chaos", model, tools=[work])])
        outcome = await client.outcome("s1", input_id, timeout=30)
        rt.nursery.cancel_scope.cancel()
    return outcome, model


async def test_a_turn_a_killed_worker_cut_is_continued_after_repair_and_answered(dsn, tmp_path):
    log, stderr = tmp_path / "model.log", tmp_path / "worker.stderr"
    worker = await start_worker(dsn, stderr, log=log, delay=0.01, tool_delay=600, lease=LEASE)
    try:
        await ready(worker, stderr)
        async with PostgresStore(dsn, lease=LEASE) as client:
            input_id = await client.submit("s1", "s1 go", spec="chaos")
        await tool_started(log, worker)
        worker.kill()
        killed = time.monotonic()
    finally:
        worker.kill()
        await worker.wait()
    outcome, model = await continue_elsewhere(dsn, input_id, LEASE)
    assert time.monotonic() - killed < LEASE + 10
    # The model saw the repaired history: the call that was running may have
    # had effects, and is not run again.
    assert outcome == Outcome("completed", "done after all")
    (request,) = model.requests
    result = request.messages[-1]
    assert isinstance(result, ToolResultMessage) and result.is_error
    assert TOOL_OUTCOME_UNKNOWN in result.content[0].text
    assert turn_ends(dsn, "s1") == [("aborted", "crash"), ("completed", None)]


async def test_a_stopped_worker_gives_its_sessions_up_at_once_for_another_to_continue(dsn, tmp_path):
    log, stderr = tmp_path / "model.log", tmp_path / "worker.stderr"
    lease = 30.0  # a takeover by lease expiry would take this long
    worker = await start_worker(dsn, stderr, log=log, delay=0.01, tool_delay=600, lease=lease, grace=0.2)
    try:
        await ready(worker, stderr)
        async with PostgresStore(dsn, lease=lease) as client:
            input_id = await client.submit("s1", "s1 go", spec="chaos")
        await tool_started(log, worker)
        worker.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        with trio.fail_after(10):
            assert await worker.wait() == 0, stderr.read_text()
    finally:
        worker.kill()
        await worker.wait()
    outcome, model = await continue_elsewhere(dsn, input_id, lease)
    assert time.monotonic() - stopped < 10
    assert outcome == Outcome("completed", "done after all")
    assert turn_ends(dsn, "s1") == [("aborted", "released"), ("completed", None)]
    assert model.requests[0].messages[-1].is_error


def test_worker_mistakes_are_one_line_and_exit_1(tmp_path):
    def worker(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "agentrio", "worker", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    for args, message in [
        (
            ("--db", str(tmp_path / "x.db"), "--spec", "tests.fleet.chaos_spec:SPEC"),
            "needs a PostgreSQL store",
        ),
        (("--db", "postgresql:///x", "--spec", "tests.fleet.chaos_spec"), "--spec takes MODULE:ATTR"),
        (("--db", "postgresql:///x", "--spec", "tests.fleet.chaos_spec:DELAY"), "expected an AgentSpec"),
        (
            ("--db", "postgresql:///x", "--spec", "tests.fleet.chaos_spec:SPEC", "--max-sessions", "0"),
            "at least 1",
        ),
    ]:
        done = worker(*args)
        assert done.returncode == 1, done.stderr
        assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


async def test_a_worker_paused_past_its_lease_writes_nothing_after_another_continued_its_turn(dsn, tmp_path):
    log, stderr = tmp_path / "model.log", tmp_path / "worker.stderr"
    worker = await start_worker(dsn, stderr, log=log, delay=0.01, tool_delay=600, lease=LEASE)
    try:
        await ready(worker, stderr)
        async with PostgresStore(dsn, lease=LEASE) as client:
            input_id = await client.submit("s1", "s1 go", spec="chaos")
        await tool_started(log, worker)
        worker.send_signal(signal.SIGSTOP)
        outcome, _ = await continue_elsewhere(dsn, input_id, LEASE)
        assert outcome == Outcome("completed", "done after all")
        worker.send_signal(signal.SIGCONT)
        await trio.sleep(LEASE)  # it learns that its lease is gone, and stops its turn
        assert turn_ends(dsn, "s1") == [("aborted", "crash"), ("completed", None)]
        worker.send_signal(signal.SIGTERM)
        with trio.fail_after(10):
            assert await worker.wait() == 0, stderr.read_text()
    finally:
        worker.send_signal(signal.SIGCONT)
        worker.kill()
        await worker.wait()
    assert turn_ends(dsn, "s1") == [("aborted", "crash"), ("completed", None)]
