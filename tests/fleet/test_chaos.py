"""Three worker processes on one PostgreSQL database, two of them killed
while they run sessions: every input is still answered, once, by one worker
at a time, and every history stays one a provider accepts."""

from __future__ import annotations

import signal
import time

import trio

from agentrio import Outcome, PostgresStore, UserMessage
from agentrio.journal.codec import decode_record
from agentrio.journal.outcomes import Outcomes
from agentrio.journal.projection import SessionState
from agentrio.journal.records import InboxSpliced, TurnEnded
from agentrio.journal.repair import CRASH
from agentrio.models import ModelRequest
from agentrio.models.scripted import request_problems

from .workers import model_intervals, ready, start_worker

SESSIONS = 30
PROMPTS = 2
LEASE = 2.0
#: Killed at these seconds after the first submission.
KILLS = (3.0, 8.0)


async def test_every_input_is_answered_once_when_workers_are_killed(dsn, tmp_path):
    log = tmp_path / "model.log"
    options = {"log": log, "delay": 0.6, "lease": LEASE, "max_sessions": 3, "idle_release": 0.5}
    errors = [tmp_path / f"worker{n}.stderr" for n in range(5)]
    workers = [await start_worker(dsn, errors[n], **options) for n in range(3)]
    for worker, stderr in zip(workers, errors):
        await ready(worker, stderr)
    killed: dict[int, float] = {}
    outcomes: dict[tuple[str, str], Outcome] = {}
    try:
        async with PostgresStore(dsn, lease=LEASE) as client:
            inputs = []
            for n in range(SESSIONS):
                session = f"s{n:02}"
                for p in range(1, PROMPTS + 1):
                    prompt = f"{session} p{p}"
                    inputs.append((session, prompt, await client.submit(session, prompt, spec="chaos")))
            began = time.monotonic()

            async def chaos() -> None:
                for victim, at in enumerate(KILLS):
                    await trio.sleep(at - (time.monotonic() - began))
                    workers[victim].kill()
                    killed[workers[victim].pid] = time.time()
                    workers.append(await start_worker(dsn, errors[len(workers)], **options))

            async def wait(session: str, prompt: str, input_id: str) -> None:
                outcomes[session, prompt] = await client.outcome(session, input_id, timeout=60)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(chaos)
                async with trio.open_nursery() as waits:
                    for item in inputs:
                        waits.start_soon(wait, *item)
            elapsed = time.monotonic() - began
        # Graceful stop of the survivors.
        for worker in workers[len(KILLS) :]:
            worker.send_signal(signal.SIGTERM)
        with trio.fail_after(20):
            for worker in workers[len(KILLS) :]:
                assert await worker.wait() == 0
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.kill()
                await worker.wait()

    # Every input got its outcome: a real answer, to that very prompt.
    assert outcomes == {(s, p): Outcome("completed", f"answer to {p}") for s, p, _ in inputs}
    assert elapsed > KILLS[-1], "the workload ended before the second kill: make it longer"

    import psycopg

    with psycopg.connect(dsn, autocommit=True, options="-c search_path=agentrio") as conn:
        rows = conn.execute("SELECT session_id, data FROM records ORDER BY session_id, seq").fetchall()
        assert conn.execute("SELECT count(*) FROM inputs").fetchone() == (0,)
    journals: dict[str, list] = {}
    for session, data in rows:
        journals.setdefault(session, []).append(decode_record(data))
    assert len(journals) == SESSIONS

    continued = 0
    for session, records in journals.items():
        # None answered twice, each taken in once.
        followed = Outcomes()
        followed.feed(records)
        assert followed.twice == [] and not followed.unfinished
        sent = [q.id for r in records if isinstance(r, InboxSpliced) and r.reason == "send" for q in r.items]
        assert sorted(sent) == sorted(i for s, _, i in inputs if s == session)
        continued += sum(isinstance(r, TurnEnded) and r.cancel_cause == CRASH for r in records)
        # Provider-valid: a strict model accepts the next request.
        state = SessionState.replay(records)
        assert not state.turn_open and not state.next_turn
        request = ModelRequest("", [*state.messages, UserMessage("next")])
        assert request_problems(request) == [], session
    assert continued >= 1, "no kill fell inside a turn: the test did not test recovery"

    # Fencing: no session had model requests from two processes at once.
    for session, intervals in model_intervals(log, killed).items():
        intervals.sort(key=lambda i: i[1])
        for n, (pid_a, _, end_a) in enumerate(intervals):
            for pid_b, start_b, _ in intervals[n + 1 :]:
                assert pid_a == pid_b or end_a <= start_b, f"{session} ran in {pid_a} and {pid_b} at once"
