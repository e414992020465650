"""The PostgreSQL journal against the SQLite journal, in the same run.

    python bench/pg_journal.py [--turns 1000] [--runs 5] [--quick] [--json]

An agent's stream of records (``journal.agent_stream``: inbox, turn and
step boundaries, messages, tool starts) appended one at a time through
``Journal``, with a sync wherever the agent syncs (after each tool start
and at each turn's end): once on an ``SQLiteStore`` (``synchronous=NORMAL``,
the peer) and once on a ``PostgresStore`` on a throwaway local server
(``tests/pgcluster.py``, Unix socket, the server's default settings: each
commit is flushed to its disk), alternating, each on a fresh file or schema.

The measure is CPU time: SQLite's is all in this process; PostgreSQL's is
this process's plus the server's (every process of the throwaway cluster,
from /proc), since the work moved there is still work. Waiting for the
disk is not CPU time, and is shown apart as wall time. Figure: events a
second of CPU time, median [min–max] of the runs; the ratio is
PostgreSQL's over SQLite's (target ≥ 0.5).
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import trio
from _measure import RUNS, Spread, header
from _rows import Row, emit, spread_row

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from journal import agent_stream

from agentrio import PostgresStore, SQLiteStore
from agentrio.journal import Journal, SessionInfo, SessionState, Store
from agentrio.journal.records import Record
from tests.pgcluster import Cluster, ServerMissing

TARGET = 0.5
_TICK = os.sysconf("SC_CLK_TCK")


def server_cpu(cluster: Cluster) -> float:
    """CPU seconds used so far by the cluster: the postmaster, its children
    now, and those it has reaped."""
    postmaster = int((cluster.folder / "data" / "postmaster.pid").read_text().split()[0])
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        pid, ppid = int(entry), int(fields[1])
        if pid == postmaster:
            total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        elif ppid == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / _TICK


async def append(
    store: Store, stream: list[tuple[Record, bool]], server: Callable[[], float]
) -> dict[str, float]:
    """Append the stream to a new session of the open store; the store's
    opening (and schema creation) is not timed."""
    async with store:
        await store.create_session(SessionInfo("agent"))
        journal = Journal(store, "agent", SessionState())
        cpu, wall, other = time.process_time(), time.perf_counter(), server()
        for record, barrier in stream:
            await journal.append(record)
            if barrier:
                await journal.sync()
        await journal.sync()
        client = time.process_time() - cpu
        return {"cpu": client + server() - other, "client": client, "wall": time.perf_counter() - wall}


def timed(
    make: Callable[[], Store], stream: list[tuple[Record, bool]], server: Callable[[], float]
) -> dict[str, float]:
    gc.collect()
    return trio.run(append, make(), stream, server)


#: What is measured in each run: a name and the store it makes for a run.
Contender = tuple[str, Callable[[str, int], Store]]


def measure(turns: int, runs: int) -> dict[str, dict[str, Spread]]:
    """Events a second of CPU time (client and server), of client CPU time
    alone, and of wall time, for each contender; the contenders alternate
    within each run."""
    stream = list(agent_stream(turns))
    try:
        cluster = Cluster.start()
    except ServerMissing as exc:
        raise SystemExit(f"pg_journal: {exc}") from None
    results: dict[str, list[dict[str, float]]] = {}
    try:
        dsn = cluster.new_database()
        contenders: list[Contender] = [
            ("sqlite", lambda folder, run: SQLiteStore(Path(folder) / f"{run}.db", synchronous="NORMAL")),
            ("pg off", lambda _, run: PostgresStore(dsn, schema=f"off{run}", synchronous_commit="off")),
            ("pg on", lambda _, run: PostgresStore(dsn, schema=f"on{run}", synchronous_commit="on")),
        ]
        with tempfile.TemporaryDirectory() as folder:
            for run in range(runs):
                for name, make in contenders:
                    server = (lambda: 0.0) if name == "sqlite" else functools.partial(server_cpu, cluster)
                    store = functools.partial(make, folder, run)
                    results.setdefault(name, []).append(timed(store, stream, server))
    finally:
        cluster.stop()
    events = len(stream)
    return {
        name: {clock: Spread(tuple(events / r[clock] for r in runs_)) for clock in ("cpu", "client", "wall")}
        for name, runs_ in results.items()
    }


def rows(runs: int = RUNS, quick: bool = False, turns: int = 1000) -> list[Row]:
    figures = measure(20 if quick else turns, runs)
    lite = figures["sqlite"]
    return [
        spread_row(
            "pg_journal",
            "barriers on: events per CPU second",
            f"PostgreSQL journal (synchronous_commit={setting})",
            figures[f"pg {setting}"]["cpu"].values,
            "events/s",
            reference="SQLite (synchronous=NORMAL)",
            reference_values=lite["cpu"].values,
            target=f">= {TARGET:g}",
            note=(
                f"client CPU alone: {figures[f'pg {setting}']['client'].median:,.0f} events/s; "
                f"wall: {figures[f'pg {setting}']['wall'].median:,.0f} vs {lite['wall'].median:,.0f}"
            ),
        )
        for setting in ("off", "on")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that it runs")
    parser.add_argument("--json", action="store_true", help="the rows as JSON, for bench/report.py")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    result = rows(args.runs, args.quick, args.turns)
    if not args.json:
        header("PostgreSQL journal vs SQLite journal, same stream, same barriers", args.runs)
    emit(result, args.json)


if __name__ == "__main__":
    main()
