"""What journaling the state machine's transitions costs per turn.

    python bench/state_records.py [--turns 200] [--rounds 5]

Runs ``--turns`` turns of one agent on an ``SQLiteStore`` (each turn: a
prompt, a model reply with one tool call, its result, a final answer: two
steps, 14 state transitions), once with the transitions journaled (as the
agent does) and once with them only announced, alternating, and prints per
turn the median (of ``--rounds``) CPU time, records and journal bytes of
each, and the difference.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrio import AgentSpec, AssistantMessage, Runtime, ScriptedModel, SQLiteStore, Text, Tool, ToolCall
from agentrio.actors.activity import Activity
from agentrio.events import State

JOURNALED = Activity.state


def _announced_only(self: Activity, name: str) -> None:
    self.emit(State, name=name)


def _replies(turns: int) -> list[AssistantMessage]:
    replies = []
    for turn in range(turns):
        replies.append(
            AssistantMessage([Text("let me look"), ToolCall(f"c{turn}", "echo", {"text": "x" * 40})])
        )
        replies.append(AssistantMessage([Text("the answer is 42, as the file says")]))
    return replies


async def _echo(args, ctx):
    return "echo: " + args["text"]


async def _run(db: Path, turns: int) -> None:
    tool = Tool("echo", "Echo.", {"type": "object", "properties": {"text": {"type": "string"}}}, _echo)
    async with SQLiteStore(db) as store, Runtime(store) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel(_replies(turns)), tools=[tool]), session_id="s")
        for turn in range(turns):
            await agent.run(f"question {turn}")


def _measure(journaled: bool, turns: int) -> tuple[float, int, int]:
    Activity.state = JOURNALED if journaled else _announced_only
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "s.db"
        started = time.process_time()
        trio.run(_run, db, turns)
        cpu = time.process_time() - started
        with sqlite3.connect(db) as connection:
            tables = [
                row[0] for row in connection.execute("select name from sqlite_master where type='table'")
            ]
            table = "records" if "records" in tables else tables[0]
            columns = [row[1] for row in connection.execute(f"pragma table_info({table})")]
            data = "data" if "data" in columns else columns[-1]
            count, size = connection.execute(f"select count(*), sum(length({data})) from {table}").fetchone()
    return cpu / turns * 1e6, count / turns, size / turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results: dict[bool, list[tuple[float, int, int]]] = {True: [], False: []}
    for _ in range(args.rounds):
        for journaled in (False, True):
            results[journaled].append(_measure(journaled, args.turns))
    medians = {k: [statistics.median(r[i] for r in v) for i in range(3)] for k, v in results.items()}
    for journaled, label in ((False, "announced only"), (True, "journaled")):
        cpu, records, size = medians[journaled]
        print(f"{label:>15}: {cpu:8.0f} µs CPU, {records:5.1f} records, {size:7.0f} bytes per turn")
    cpu, records, size = (medians[True][i] - medians[False][i] for i in range(3))
    print(f"{'difference':>15}: {cpu:+8.0f} µs CPU, {records:+5.1f} records, {size:+7.0f} bytes per turn")


if __name__ == "__main__":
    main()
