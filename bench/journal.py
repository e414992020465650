"""Journal throughput with the durability barriers on, and restore time.

    python bench/journal.py

* "append": an agent's stream of records (inbox, turn and step boundaries,
  messages, tool starts), appended one at a time through ``Journal``, with
  a sync wherever the agent syncs: after each tool start (before its body
  runs; it also covers the results before an exclusive call) and at the end
  of every turn. Once for one agent, whose every sync waits for a commit,
  and once for 8 agents on one store, whose syncs share commits. On
  ``SQLiteStore`` (synchronous NORMAL and FULL) and on ``PostgresStore``
  (a throwaway local server with PostgreSQL's defaults: every commit is
  flushed to disk). The peer is a plain sqlite3 journal that commits every
  append on the calling thread (blocking the event loop each time), with
  the same JSON, the same file settings and the same projection.
* "restore": ``Runtime.create`` of a stored session of 1,000 and 10,000
  messages, written by the journal (so with its snapshots), from each store.
  The peer reads every record of the same session from SQLite and replays it.

Each figure is the median of several rounds (wall-clock time: the database
server's work is part of it), with the spread (lowest and highest) beside
it; files live in a temporary folder, each PostgreSQL round gets a new
database. The PostgreSQL server needs its binaries (Debian: postgresql).
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrio import (  # noqa: E402
    AgentSpec,
    AssistantMessage,
    Runtime,
    ScriptedModel,
    SQLiteStore,
    Text,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentrio.journal import Journal, PostgresStore, SessionInfo, SessionState, Store  # noqa: E402
from agentrio.journal.codec import decode_record, encode_record  # noqa: E402
from tests.pgcluster import Cluster  # noqa: E402

from agentrio.journal.records import (  # noqa: E402
    InboxSpliced,
    MessageAppended,
    QueuedInput,
    Record,
    StepEnded,
    StepStarted,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)

CALLS_PER_TURN = 3
#: Messages a turn adds: the prompt, each call and its result, the answer.
MESSAGES_PER_TURN = 2 + 2 * CALLS_PER_TURN
FILE_TEXT = "def handler(event):\n    return process(event.payload, retries=3)\n" * 8

#: Agents sharing one store in the second append figure.
AGENTS = 8

TARGET_EVENTS_PER_SECOND = 20_000
TARGET_RESTORE_MS = 300


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


# --- stores ----------------------------------------------------------------------

#: Makes a new store on a new database for each round.
StoreMaker = Callable[[], Store]


def store_makers(folder: Path, cluster: Cluster) -> dict[str, StoreMaker]:
    files = (folder / f"bench-{i}.db" for i in itertools.count())
    return {
        "SQLite NORMAL": lambda: SQLiteStore(next(files), synchronous="NORMAL"),
        "SQLite FULL": lambda: SQLiteStore(next(files), synchronous="FULL"),
        "PostgreSQL": lambda: PostgresStore(cluster.new_database()),
    }


def spread(seconds: list[float], work: float = 1.0) -> tuple[float, float, float]:
    """``work`` per second: the median, lowest and highest over the rounds."""
    rates = sorted(work / s for s in seconds)
    return statistics.median(rates), rates[0], rates[-1]


def figure(median: float, low: float, high: float, fmt: str = "7,.0f") -> str:
    return f"{median:{fmt}} [{low:{fmt.lstrip('7')}}-{high:{fmt.lstrip('7')}}]"


# --- appending -------------------------------------------------------------------


async def ours_append(make: StoreMaker, streams: list[list[tuple[Record, bool]]]) -> float:
    """Seconds to append every stream, each as its own agent's session."""
    async with make() as store:
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

        start = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for journal, stream in zip(journals, streams):
                nursery.start_soon(agent, journal, stream)
        return time.perf_counter() - start


def naive_append(path: Path, stream: list[tuple[Record, bool]], synchronous: str) -> float:
    conn = sqlite3.connect(path, isolation_level=None)  # each statement is its own commit
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute(
        "CREATE TABLE records (session_id TEXT, seq INTEGER, data TEXT, PRIMARY KEY (session_id, seq))"
    )
    state = SessionState()
    start = time.perf_counter()
    for seq, (record, _) in enumerate(stream, 1):
        conn.execute("INSERT INTO records VALUES (?, ?, ?)", ("bench", seq, encode_record(record)))
        state.apply(record)
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


# --- restoring -------------------------------------------------------------------


async def write_session(store: Store, session_id: str, turns: int) -> None:
    await store.create_session(SessionInfo(session_id))
    journal = Journal(store, session_id, SessionState())
    for record, barrier in agent_stream(turns):
        await journal.append(record)
        if barrier:
            await journal.sync()


async def ours_restore(store: Store, session_id: str, messages: int) -> float:
    async with Runtime(store) as rt:
        start = time.perf_counter()
        agent = await rt.create(AgentSpec("bench", ScriptedModel([])), session_id)
        elapsed = time.perf_counter() - start
        assert len(agent.messages) == messages
    return elapsed


def naive_restore(path: Path, session_id: str, messages: int) -> float:
    conn = sqlite3.connect(path)
    start = time.perf_counter()
    rows = conn.execute("SELECT data FROM records WHERE session_id = ? ORDER BY seq", (session_id,))
    state = SessionState.replay(decode_record(data) for (data,) in rows)
    elapsed = time.perf_counter() - start
    conn.close()
    assert len(state.messages) == messages
    return elapsed


# --- the report ------------------------------------------------------------------


async def bench_append(folder: Path, makers: dict[str, StoreMaker], turns: int, rounds: int) -> float:
    """Events a second for one agent on SQLite with synchronous=NORMAL (the median)."""
    stream = list(agent_stream(turns))
    shared = [list(agent_stream(turns // AGENTS)) for _ in range(AGENTS)]
    files = (folder / f"append-peer-{i}.db" for i in itertools.count())
    events, shared_events = len(stream), sum(map(len, shared))
    print(f"append: {events:,} events ({turns:,} turns), a sync after each tool start and each turn end")
    print("  events/s: median [lowest-highest], and the median's ratio to the peer (commit per append)")
    peers = {
        synchronous: spread([naive_append(next(files), stream, synchronous) for _ in range(rounds)], events)
        for synchronous in ("NORMAL", "FULL")
    }
    for synchronous, peer in peers.items():
        print(f"  peer, synchronous={synchronous:<6}        {figure(*peer)}")
    results = {}
    for name, make in makers.items():
        one = spread([await ours_append(make, [stream]) for _ in range(rounds)], events)
        several = spread([await ours_append(make, shared) for _ in range(rounds)], shared_events)
        results[name] = one
        peer = peers["FULL" if name == "SQLite FULL" else "NORMAL"][0]
        print(
            f"  {name:<14} 1 agent {figure(*one)} ({one[0] / peer:4.1f}x)   "
            f"{AGENTS} agents {figure(*several)} ({several[0] / peer:4.1f}x)"
        )
    for sqlite in ("SQLite NORMAL", "SQLite FULL"):
        print(f"  PostgreSQL / {sqlite}, 1 agent: {results['PostgreSQL'][0] / results[sqlite][0]:.2f}x")
    return results["SQLite NORMAL"][0]


async def bench_restore(folder: Path, makers: dict[str, StoreMaker], rounds: int) -> dict[int, float]:
    """The median 10,000-message restore on SQLite NORMAL, in ms."""
    sizes = {1_000: "s1k", 10_000: "s10k"}
    print("restore: Runtime.create of a stored session (snapshot + records after it), ms")
    print("  median [lowest-highest]; the peer reads every record from SQLite and replays it")
    peer_path = folder / "restore-peer.db"
    async with SQLiteStore(peer_path) as store:
        for messages, session_id in sizes.items():
            await write_session(store, session_id, messages // MESSAGES_PER_TURN)
    peers = {
        messages: statistics.median([1e3 * naive_restore(peer_path, sid, messages) for _ in range(rounds)])
        for messages, sid in sizes.items()
    }
    results = {}
    for name, make in makers.items():
        if name == "SQLite FULL":
            continue  # reads as NORMAL does
        store = make()
        async with store:
            for messages, session_id in sizes.items():
                await write_session(store, session_id, messages // MESSAGES_PER_TURN)
            for messages, session_id in sizes.items():
                times = sorted([1e3 * await ours_restore(store, session_id, messages) for _ in range(rounds)])
                median, peer = statistics.median(times), peers[messages]
                results[(name, messages)] = median
                print(
                    f"  {name:<14} {messages:>6,} messages {median:7.1f} [{times[0]:.1f}-{times[-1]:.1f}]"
                    f"   full replay {peer:7.1f}   ratio {peer / median:4.1f}x"
                )
    return {messages: results[("SQLite NORMAL", messages)] for messages in sizes}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2_000, help="turns in the append stream")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.rounds < 5:
        parser.error("--rounds must be at least 5: a median of fewer says little")
    cluster = Cluster.start()
    try:
        print(
            f"Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, "
            f"PostgreSQL {cluster.server_version()}, median of {args.rounds} rounds\n"
        )
        with tempfile.TemporaryDirectory() as folder:
            makers = store_makers(Path(folder), cluster)
            events_per_second = await bench_append(Path(folder), makers, args.turns, args.rounds)
            print()
            restore_ms = await bench_restore(Path(folder), makers, args.rounds)
    finally:
        cluster.stop()
    print()
    print(
        f"targets (SQLite NORMAL): >= {TARGET_EVENTS_PER_SECOND:,} events/s (one agent): {events_per_second:,.0f} "
        f"({'met' if events_per_second >= TARGET_EVENTS_PER_SECOND else 'MISSED'}); "
        f"10,000-message restore < {TARGET_RESTORE_MS} ms: {restore_ms[10_000]:.1f} ms "
        f"({'met' if restore_ms[10_000] < TARGET_RESTORE_MS else 'MISSED'})"
    )


if __name__ == "__main__":
    trio.run(main)
