"""Journal throughput with the durability barriers on, and restore time.

    python bench/journal.py

* "append": an agent's stream of records (inbox, turn and step boundaries,
  messages, tool starts), appended one at a time through ``Journal`` on an
  ``SQLiteStore``, with a sync wherever the agent syncs: after each tool
  start (before its body runs; it also covers the results before an
  exclusive call) and at the end of every turn. Once for one agent, whose
  every sync waits for a commit, and once for 8 agents on one store, whose
  syncs share commits. The peer is a plain sqlite3 journal that commits
  every append on the calling thread (blocking the event loop each time),
  with the same JSON, the same file settings and the same projection.
* "restore": ``Runtime.create`` of a stored session of 1,000 and 10,000
  messages, written by the journal (so with its snapshots). The peer reads
  every record of the same session and replays it.

Each figure is the best of several rounds, on files in a temporary folder.
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
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
from agentrio.journal import Journal, SessionInfo, SessionState  # noqa: E402
from agentrio.journal.codec import decode_record, encode_record  # noqa: E402
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


# --- appending -------------------------------------------------------------------


async def ours_append(path: Path, streams: list[list[tuple[Record, bool]]], synchronous: str) -> float:
    """Seconds to append every stream, each as its own agent's session."""
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


async def write_session(store: SQLiteStore, session_id: str, turns: int) -> None:
    await store.create_session(SessionInfo(session_id))
    journal = Journal(store, session_id, SessionState())
    for record, barrier in agent_stream(turns):
        await journal.append(record)
        if barrier:
            await journal.sync()


async def ours_restore(store: SQLiteStore, session_id: str, messages: int) -> float:
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


async def bench_append(folder: Path, turns: int, rounds: int) -> float:
    """Events a second for one agent with synchronous=NORMAL."""
    stream = list(agent_stream(turns))
    shared = [list(agent_stream(turns // AGENTS)) for _ in range(AGENTS)]
    files = (folder / f"append-{i}.db" for i in itertools.count())
    events = len(stream)
    print(f"append: {events:,} events ({turns:,} turns), a sync after each tool start and each turn end")
    print("  events/s, and agentrio's ratio to the peer (commit per append)")
    single_normal = 0.0
    for synchronous in ("NORMAL", "FULL"):
        single = min([await ours_append(next(files), [stream], synchronous) for _ in range(rounds)])
        many = min([await ours_append(next(files), shared, synchronous) for _ in range(rounds)])
        naive = min(naive_append(next(files), stream, synchronous) for _ in range(rounds))
        peer = events / naive
        one, several = events / single, sum(map(len, shared)) / many
        print(
            f"  synchronous={synchronous:<6}  agentrio 1 agent {one:7,.0f} ({one / peer:3.1f}x)   "
            f"{AGENTS} agents {several:7,.0f} ({several / peer:3.1f}x)   peer {peer:7,.0f}"
        )
        if synchronous == "NORMAL":
            single_normal = one
    return single_normal


async def bench_restore(folder: Path, rounds: int) -> dict[int, float]:
    path = folder / "restore.db"
    sizes = {1_000: "s1k", 10_000: "s10k"}
    async with SQLiteStore(path) as store:
        for messages, session_id in sizes.items():
            await write_session(store, session_id, messages // MESSAGES_PER_TURN)
        print("restore: Runtime.create of a stored session (snapshot + records after it)")
        results = {}
        for messages, session_id in sizes.items():
            ours = [await ours_restore(store, session_id, messages) for _ in range(rounds)]
            naive = min(naive_restore(path, session_id, messages) for _ in range(rounds))
            results[messages] = min(ours) * 1e3
            print(
                f"  {messages:>6,} messages  agentrio {min(ours) * 1e3:7.1f} ms (median {statistics.median(ours) * 1e3:.1f})"
                f"   full replay {naive * 1e3:7.1f} ms   ratio {naive / min(ours):4.1f}x"
            )
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2_000, help="turns in the append stream")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, best of {args.rounds} rounds\n")
    with tempfile.TemporaryDirectory() as folder:
        events_per_second = await bench_append(Path(folder), args.turns, args.rounds)
        print()
        restore_ms = await bench_restore(Path(folder), args.rounds)
    print()
    print(
        f"targets: >= {TARGET_EVENTS_PER_SECOND:,} events/s (one agent): {events_per_second:,.0f} "
        f"({'met' if events_per_second >= TARGET_EVENTS_PER_SECOND else 'MISSED'}); "
        f"10,000-message restore < {TARGET_RESTORE_MS} ms: {restore_ms[10_000]:.1f} ms "
        f"({'met' if restore_ms[10_000] < TARGET_RESTORE_MS else 'MISSED'})"
    )


if __name__ == "__main__":
    trio.run(main)
