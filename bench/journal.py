"""Journal throughput with the durability barriers on, and restore time.

    python bench/journal.py [--turns 2000] [--full-turns 200] [--rounds 5] [--postgres] [--json]

* "append": an agent's stream of records (inbox, turn and step boundaries,
  messages, tool starts), appended one at a time through ``Journal`` on an
  ``SQLiteStore``, with a sync wherever the agent syncs: after each tool
  start (before its body runs; it also covers the results before an
  exclusive call) and at the end of every turn. Once for one agent, and once
  for 8 agents on one store, whose syncs may share commits. The peer is a
  plain sqlite3 journal that commits every append on the calling thread,
  with the same JSON, the same file settings, the same kind of table and
  the same projection.
* "restore": ``Runtime.create`` of a stored session of 1,000 and 10,000
  messages, written by the journal (so with its snapshots). The peer reads
  every record of the same session and replays it. With ``--postgres``,
  the same from a throwaway PostgreSQL server (``tests/pgcluster.py``).

Every figure is the median of ``--rounds`` runs (ours and the peer's
alternate, on fresh files in a temporary folder), with the spread as
(min-max). CPU time is ``time.process_time()``: the whole process, so the
store's thread too. With ``synchronous=NORMAL`` nothing waits for the disk
(a WAL commit is a write to the OS's cache), so CPU time is the measure;
with ``FULL`` every commit waits for an fsync, which is not CPU time, so
wall time is. Both are printed, and the ratio (peer / agentrio: above 1,
agentrio is faster) of each. ``--json`` prints the rows for bench/report.py
(see bench/_rows.py) after the text, as the last line.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import inspect
import itertools
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _rows import Row, emit, spread_row

from agentrio import (
    AgentSpec,
    AssistantMessage,
    PostgresStore,
    Runtime,
    ScriptedModel,
    SQLiteStore,
    Text,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentrio.journal import Journal, SessionInfo, SessionState, Store
from agentrio.journal.codec import decode_record, encode_record
from agentrio.journal.records import (
    MessageAppended,
    Record,
    StepEnded,
    StepStarted,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from agentrio.mailbox import InboxSpliced, QueuedInput

CALLS_PER_TURN = 3
#: Messages a turn adds: the prompt, each call and its result, the answer.
MESSAGES_PER_TURN = 2 + 2 * CALLS_PER_TURN
FILE_TEXT = "def handler(event):\n    return process(event.payload, retries=3)\n" * 8

#: Agents sharing one store in the second append figure.
AGENTS = 8

TARGET_APPEND_RATIO = 1.5
TARGET_RESTORE_MS = 100
#: The most a restore may cost, as a multiple of reading and replaying every row.
TARGET_RESTORE_RATIO = 1.2


def agent_stream(turns: int) -> Iterator[tuple[Record, bool]]:
    """Records in the order an agent writes them, each with whether the agent
    syncs right after it."""
    step = 0
    for turn in range(1, turns + 1):
        prompt = QueuedInput(
            f"in_{turn}", UserMessage(f"Turn {turn}: find why the handler retries and fix it.")
        )
        yield InboxSpliced("next_turn", 0, 0, [prompt], "send"), False
        yield TurnStarted(turn), False
        yield InboxSpliced("next_turn", 0, 1, [], "claim"), False
        step += 1
        yield StepStarted(step), False
        yield MessageAppended(prompt.message), False
        for index in range(CALLS_PER_TURN):
            call = ToolCall(f"call_{turn}_{index}", "read", {"path": f"src/handlers/module_{index}.py"})
            text = Text("Let me read the handler module to see where the retries come from.")
            yield MessageAppended(AssistantMessage([text, call], usage=Usage(2400, 60, 2000))), False
            yield ToolCallStarted(call.id), True
            yield MessageAppended(ToolResultMessage(call.id, "read", [Text(FILE_TEXT)])), False
            yield StepEnded(step), False
            step += 1
            yield StepStarted(step), False
        answer = Text("The handler retried on every error; it now retries only on timeouts.")
        yield MessageAppended(AssistantMessage([answer], usage=Usage(2600, 80, 2000))), False
        yield StepEnded(step), False
        yield TurnEnded(turn, "completed"), True


# --- appending -------------------------------------------------------------------


async def ours_append(path: Path, streams: list[list[tuple[Record, bool]]], synchronous: str) -> None:
    """Append every stream, each as its own agent's session."""
    async with SQLiteStore(path, synchronous=synchronous) as store:
        journals = []
        for index in range(len(streams)):
            await store.create_session(SessionInfo(f"agent {index}"))
            journals.append(Journal(store, f"agent {index}", SessionState()))

        async def agent(journal: Journal, stream: list[tuple[Record, bool]]) -> None:
            for record, barrier in stream:
                await journal.append(record)
                if barrier:
                    await journal.sync()
            await journal.sync()

        async with trio.open_nursery() as nursery:
            for journal, stream in zip(journals, streams):
                nursery.start_soon(agent, journal, stream)


def naive_append(path: Path, stream: list[tuple[Record, bool]], synchronous: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)  # each statement is its own commit
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    # The store's own layout (a rowid table, keyed by session and seq): the
    # two differ in how they commit, not in what a commit writes.
    conn.execute(
        "CREATE TABLE records (session_id TEXT, seq INTEGER, data TEXT, PRIMARY KEY (session_id, seq))"
    )
    state = SessionState()
    for seq, (record, _) in enumerate(stream, 1):
        conn.execute("INSERT INTO records VALUES (?, ?, ?)", ("bench", seq, encode_record(record)))
        state.apply(record)
    conn.close()


# --- restoring -------------------------------------------------------------------


async def write_session(store: SQLiteStore, session_id: str, turns: int) -> None:
    await store.create_session(SessionInfo(session_id))
    journal = Journal(store, session_id, SessionState())
    for record, barrier in agent_stream(turns):
        await journal.append(record)
        if barrier:
            await journal.sync()


async def ours_restore(store: SQLiteStore, session_id: str, messages: int) -> None:
    async with Runtime(store) as rt:
        agent = await rt.create(AgentSpec("bench", ScriptedModel([])), session_id)
        assert len(agent.messages) == messages


def naive_restore(path: Path, session_id: str, messages: int) -> None:
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT data FROM records WHERE session_id = ? ORDER BY seq", (session_id,))
    state = SessionState.replay(decode_record(data) for (data,) in rows)
    conn.close()
    assert len(state.messages) == messages


def naive_restore_pg(dsn: str, schema: str, session_id: str, messages: int) -> None:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            f"SELECT data FROM {schema}.records WHERE session_id = %s ORDER BY seq", (session_id,)
        )
        state = SessionState.replay(decode_record(data) for (data,) in rows)
    assert len(state.messages) == messages


# --- measuring -------------------------------------------------------------------


@attrs.define
class Times:
    """CPU and wall seconds of each run of one thing."""

    cpu: list[float] = attrs.Factory(list)
    wall: list[float] = attrs.Factory(list)

    def median(self, clock: str) -> float:
        return statistics.median(getattr(self, clock))

    def show(self, clock: str, scale: float = 1e3, unit: str = "ms") -> str:
        runs = getattr(self, clock)
        return (
            f"{statistics.median(runs) * scale:7.1f} {unit} ({min(runs) * scale:.1f}-{max(runs) * scale:.1f})"
        )


async def timed(times: Times, fn: Callable[..., Any], *args: Any) -> None:
    gc.collect()  # no collection owed by an earlier run is paid in this one
    cpu, wall = time.process_time(), time.perf_counter()
    result = fn(*args)
    if inspect.isawaitable(result):
        await result
    times.cpu.append(time.process_time() - cpu)
    times.wall.append(time.perf_counter() - wall)


def ratio(peer: Times, ours: Times, clock: str) -> float:
    return peer.median(clock) / ours.median(clock)


# --- the report ------------------------------------------------------------------


async def bench_append(folder: Path, turns: dict[str, int], rounds: int, rows: list[Row]) -> float:
    """agentrio's ratio to the peer for one agent with synchronous=NORMAL,
    in CPU time; its events per second, and the peer's, added to ``rows``."""
    files = (folder / f"append-{i}.db" for i in itertools.count())
    print("append: a sync after each tool start and each turn end")
    print(f"  median of {rounds} runs (min-max); ratio = peer / agentrio, above 1 agentrio is faster")
    headline = 0.0
    for synchronous, clock in (("NORMAL", "cpu"), ("FULL", "wall")):
        stream = list(agent_stream(turns[synchronous]))
        shared = [list(agent_stream(turns[synchronous] // AGENTS)) for _ in range(AGENTS)]
        events = len(stream)
        single, many, naive = Times(), Times(), Times()
        for _ in range(rounds):
            await timed(single, ours_append, next(files), [stream], synchronous)
            await timed(many, ours_append, next(files), shared, synchronous)
            await timed(naive, naive_append, next(files), stream, synchronous)
        print(
            f"  synchronous={synchronous}: {events:,} events ({turns[synchronous]:,} turns; "
            f"the measure: {clock} time)"
        )
        for name, times in rows_shown(single, many, naive):
            ratios = (
                f"ratio cpu {ratio(naive, times, 'cpu'):4.2f}x  wall {ratio(naive, times, 'wall'):4.2f}x"
                if times is not naive
                else "(commits every append)"
            )
            print(
                f"    {name:<19} cpu {times.show('cpu')}  wall {times.show('wall')}"
                f"  {events / times.median(clock):7,.0f} events/s  {ratios}"
            )
        if synchronous == "NORMAL":
            headline = ratio(naive, single, "cpu")
            rates = {name: [events / t for t in times.cpu] for name, times in rows_shown(single, many, naive)}
            name = f"append, synchronous=NORMAL, {events:,} events, barriers on: events/s"
            rows.append(spread_row("journal", name, "plain sqlite3", rates["peer"], "/s"))
            for who in ("agentrio, 1 agent", f"agentrio, {AGENTS} agents"):
                rows.append(
                    spread_row(
                        "journal",
                        name,
                        who,
                        rates[who],
                        "/s",
                        reference="plain sqlite3",
                        reference_values=rates["peer"],
                        target=f">= {TARGET_APPEND_RATIO}" if who.endswith(" 1 agent") else None,
                    )
                )
    return headline


def rows_shown(single: Times, many: Times, naive: Times) -> tuple[tuple[str, Times], ...]:
    return (("agentrio, 1 agent", single), (f"agentrio, {AGENTS} agents", many), ("peer", naive))


async def bench_restore(
    store: Store,
    full_replay: Callable[[str, int], None],
    where: str,
    rounds: int,
    counts: tuple[int, ...],
    rows: list[Row],
) -> dict[int, float]:
    """The CPU milliseconds of each restore from ``store``, by size, beside
    ``full_replay(session_id, messages)`` of the same session; both added to
    ``rows``."""
    sizes = {count: f"s{count}" for count in counts}
    results = {}
    for messages, session_id in sizes.items():
        await write_session(store, session_id, messages // MESSAGES_PER_TURN)
    print(
        f"restore from {where}: Runtime.create of a stored session (snapshot + records after it), {rounds} runs"
    )
    for messages, session_id in sizes.items():
        ours, naive = Times(), Times()
        for _ in range(rounds):
            await timed(ours, ours_restore, store, session_id, messages)
            await timed(naive, full_replay, session_id, messages)
        results[messages] = ours.median("cpu") * 1e3
        name = f"restore of {messages:,} messages from {where.split(' (')[0]}"
        rows += [
            spread_row("journal", name, "read and replay every row", naive.cpu),
            spread_row(
                "journal",
                name,
                "agentrio",
                ours.cpu,
                reference="read and replay every row",
                reference_values=naive.cpu,
                # The target is for a long session; a short one is mostly fixed costs.
                target=f"<= {TARGET_RESTORE_RATIO}" if messages >= 10_000 else None,
            ),
        ]
        print(
            f"  {messages:>6,} messages  agentrio cpu {ours.show('cpu')}  wall {ours.show('wall')}"
            f"   full replay cpu {naive.show('cpu')}   ratio cpu {ratio(naive, ours, 'cpu'):4.2f}x"
        )
    return results


async def bench_postgres_restore(rounds: int, counts: tuple[int, ...], rows: list[Row]) -> None:
    """The restores again from a throwaway PostgreSQL server (the tests'
    ``pgcluster``); CPU time is this process's, the server's is in wall."""
    from tests.pgcluster import Cluster, ServerMissing

    try:
        cluster = Cluster.start(fsync=False)  # reads are measured: nothing here needs to survive a crash
    except ServerMissing as exc:
        raise SystemExit(f"--postgres: {exc}") from None
    try:
        dsn = cluster.new_database()
        async with PostgresStore(dsn) as store:
            where = f"PostgreSQL {cluster.server_version().split()[0]} (CPU: this process)"
            await bench_restore(
                store, functools.partial(naive_restore_pg, dsn, store.schema), where, rounds, counts, rows
            )
    finally:
        cluster.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2_000, help="turns appended with synchronous=NORMAL")
    parser.add_argument(
        "--full-turns", type=int, default=200, help="turns appended with synchronous=FULL (an fsync a commit)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="runs of each figure (at least 5)")
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that it runs")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="restore from PostgreSQL too (a throwaway server: needs its binaries and the postgres extra)",
    )
    parser.add_argument("--json", action="store_true", help="print the rows for bench/report.py, last")
    args = parser.parse_args()
    restores = (1_000, 10_000)
    if args.quick:
        args.turns, args.full_turns, restores = 20, 5, (16 * MESSAGES_PER_TURN, 48 * MESSAGES_PER_TURN)
    if args.rounds < 5:
        parser.error("--rounds must be at least 5: a median of fewer says little")
    rows: list[Row] = []
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        await run(args, restores, rows)
    if args.json:
        emit(rows)


async def run(args: argparse.Namespace, restores: tuple[int, ...], rows: list[Row]) -> None:
    versions = f"Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}"
    print(f"{versions}, load average {os.getloadavg()[0]:.1f}\n")
    with tempfile.TemporaryDirectory() as folder:
        turns = {"NORMAL": args.turns, "FULL": args.full_turns}
        append_ratio = await bench_append(Path(folder), turns, args.rounds, rows)
        print()
        path = Path(folder) / "restore.db"
        async with SQLiteStore(path) as store:
            full_replay = functools.partial(naive_restore, path)
            restore_ms = await bench_restore(store, full_replay, "SQLite", args.rounds, restores, rows)
        if args.postgres:
            print()
            await bench_postgres_restore(args.rounds, restores, rows)
    print()
    print(
        f"targets: one agent, synchronous=NORMAL, >= {TARGET_APPEND_RATIO}x the peer in CPU time: "
        f"{append_ratio:.2f}x ({'met' if append_ratio >= TARGET_APPEND_RATIO else 'MISSED'}); "
        f"{restores[-1]:,}-message restore < {TARGET_RESTORE_MS} ms CPU: {restore_ms[restores[-1]]:.1f} ms "
        f"({'met' if restore_ms[restores[-1]] < TARGET_RESTORE_MS else 'MISSED'})"
    )


if __name__ == "__main__":
    trio.run(main)
