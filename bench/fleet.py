"""The fleet on a throwaway PostgreSQL server: latency, recovery, scaling.

    python bench/fleet.py [--rounds 5] [--samples 100] [--only latency,recovery,throughput]

Workers are ``agentrio worker`` processes serving ``tests/fleet/chaos_spec``
(a scripted model that sleeps as told), on a server of ``tests/pgcluster.py``
(fsync on). Workers are started, and said to be serving, before anything is
timed.

* "latency": ``store.submit`` then ``store.outcome`` of one prompt at a time
  (model answers at once, no tool), three workers, no failures: for a new
  session (claimed, restored, run), and for a session a worker already holds
  (posted to its holder). p50 and p99 of ``--samples`` prompts each.
* "recovery": a worker is SIGKILLed inside a tool call of a session; time
  from the kill to the input's outcome, answered by the other worker after
  the lease ran out (repair, the cut turn continued). With the default lease
  (15 s) and a 2 s one; median of ``--rounds`` kills.
* "throughput": 120 prompts on 120 sessions, each answered through a tool
  call (two model requests of 1 s and a tool call of 0.5 s: a workload that
  waits, not one that computes), ``--max-sessions 10`` per worker (so one
  worker runs at most 4 prompts a second), by 1, 2 and 3 workers:
  prompts answered per second from the first submission to the commit of
  the last answer (every outcome is awaited too), and the workers' CPU time
  a prompt; median of ``--rounds`` runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from typing import Self

from agentrio import PostgresStore
from tests.fleet.workers import ready, start_worker
from tests.pgcluster import Cluster


class Workers:
    """Worker processes for one measurement, stopped at its end."""

    def __init__(self, dsn: str, folder: Path, **options: object) -> None:
        self.dsn, self.folder, self.options = dsn, folder, options
        self.processes: list[trio.Process] = []

    async def start(self, count: int = 1) -> list[trio.Process]:
        started = []
        for _ in range(count):
            stderr = self.folder / f"worker{len(self.processes)}.stderr"
            process = await start_worker(self.dsn, stderr, **self.options)
            self.processes.append(process)
            started.append((process, stderr))
        for process, stderr in started:
            await ready(process, stderr)
        return [process for process, _ in started]

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        with trio.CancelScope(shield=True):
            for process in self.processes:
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)
            for process in self.processes:
                with trio.move_on_after(15):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def latency(cluster: Cluster, folder: Path, samples: int) -> None:
    dsn = cluster.new_database()
    try:
        async with Workers(dsn, folder, delay=0, tool=False, lease=None, idle_release=600) as workers:
            await workers.start(3)
            async with PostgresStore(dsn) as client:
                new, held = [], []
                for n in range(samples):
                    for session, times in ((f"new{n}", new), ("held", held)):
                        began = time.perf_counter()
                        input_id = await client.submit(session, f"{session} hello", spec="chaos")
                        await client.outcome(session, input_id, timeout=30)
                        times.append(time.perf_counter() - began)
                held = held[1:]  # the first one claimed the session
        for label, times in (("new session", new), ("held session", held)):
            print(
                f"latency submit->outcome, {label}: p50 {percentile(times, 50) * 1000:.1f} ms, "
                f"p99 {percentile(times, 99) * 1000:.1f} ms ({len(times)} prompts, 3 workers)"
            )
    finally:
        cluster.drop_database(dsn)


async def recovery(cluster: Cluster, folder: Path, rounds: int, lease: float | None) -> None:
    dsn = cluster.new_database()
    log = folder / f"recovery-{lease}.log"
    try:
        times = []
        async with Workers(dsn, folder, log=log, delay=0, tool_delay=600, lease=lease) as workers:
            await workers.start(2)
            async with PostgresStore(dsn) as client:
                for n in range(rounds):
                    session = f"r{n}"
                    input_id = await client.submit(session, f"{session} go", spec="chaos")
                    with trio.fail_after(30):
                        while not any(
                            line.startswith("T ") and line.split()[2] == session
                            for line in (log.read_text().splitlines() if log.exists() else [])
                        ):
                            await trio.sleep(0.02)
                    pid = next(
                        int(line.split()[1])
                        for line in log.read_text().splitlines()
                        if line.startswith("T ") and line.split()[2] == session
                    )
                    victim = next(p for p in workers.processes if p.pid == pid)
                    victim.kill()
                    killed = time.perf_counter()
                    await client.outcome(session, input_id, timeout=120)
                    times.append(time.perf_counter() - killed)
                    await victim.wait()
                    await workers.start(1)  # two workers again
        name = "default (15 s)" if lease is None else f"{lease:g} s"
        print(
            f"recovery after a kill, lease {name}: median {statistics.median(times):.2f} s "
            f"(min {min(times):.2f}, max {max(times):.2f}; {rounds} kills)"
        )
    finally:
        cluster.drop_database(dsn)


def last_answer(dsn: str) -> float:
    """When the last turn of the run was committed (its worker's clock: the
    same host's), so that the client's own lag in reading outcomes is not
    counted."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True, options="-c search_path=agentrio") as conn:
        return conn.execute("SELECT max(written_at) FROM records WHERE kind = 'turn_ended'").fetchone()[0]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def throughput(cluster: Cluster, folder: Path, rounds: int) -> None:
    prompts = 120
    for count in (1, 2, 3):
        rates, cpu = [], []
        for _ in range(rounds):
            dsn = cluster.new_database()
            try:
                options = {
                    "delay": 1.0,
                    "tool_delay": 0.5,
                    "lease": None,
                    "max_sessions": 10,
                    "idle_release": 0.1,
                }
                async with Workers(dsn, folder, **options) as workers:
                    started = await workers.start(count)
                    before = sum(cpu_seconds(p.pid) for p in started)
                    async with PostgresStore(dsn) as client:
                        began = time.time()
                        inputs = [
                            (f"t{n}", await client.submit(f"t{n}", f"t{n} work", spec="chaos"))
                            for n in range(prompts)
                        ]
                        async with trio.open_nursery() as nursery:
                            for session, input_id in inputs:
                                nursery.start_soon(
                                    lambda s, i: client.outcome(s, i, timeout=120), session, input_id
                                )
                        rates.append(prompts / (last_answer(dsn) - began))
                    cpu.append((sum(cpu_seconds(p.pid) for p in started) - before) / prompts)
            finally:
                cluster.drop_database(dsn)
        print(
            f"throughput, {count} worker{'s' if count > 1 else ''}: median {statistics.median(rates):.1f} "
            f"prompts/s (min {min(rates):.1f}, max {max(rates):.1f}; {rounds} runs of {prompts} prompts; "
            f"workers' CPU {statistics.median(cpu) * 1000:.0f} ms a prompt)"
        )


async def main(args: argparse.Namespace) -> None:
    cluster = Cluster.start(fsync=True)
    try:
        with tempfile.TemporaryDirectory(prefix="agentrio-fleet-") as tmp:
            folder = Path(tmp)
            if "latency" in args.only:
                await latency(cluster, folder, args.samples)
            if "recovery" in args.only:
                await recovery(cluster, folder, args.rounds, 2.0)
                await recovery(cluster, folder, args.rounds, None)
            if "throughput" in args.only:
                await throughput(cluster, folder, args.rounds)
    finally:
        cluster.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--only", default="latency,recovery,throughput", type=lambda s: set(s.split(",")))
    trio.run(main, parser.parse_args())
