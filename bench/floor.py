"""agentrio against the floor: the least a trio program needs for the same turn.

    python bench/floor.py [--turns N] [--runs R] [--quick] [--json]

One turn is the workload of bench/_workload.py: a prompt, a streamed model
reply asking for 4 parallel calls of a no-op tool, the results, and a
streamed text answer, with one reader taking every event. The floor does
that turn as the simplest correct trio program would: the reply's chunks
are read from an async generator, the calls run in a nursery of their own
(one task each), their results are put back in the model's order, every
event is an attrs object sent on a bounded memory channel to the reader,
and the history is a list; no journal, no inbox, no validation, no
supervision. agentrio runs the same turn through its public API with one
subscriber reading every event: in memory (``MemoryStore``), and with the
SQLite journal (its barriers on, ``synchronous=NORMAL``).

Figures, in CPU time, median [min-max] of R runs, each a conversation of N
turns in a fresh event loop (the mean of its turns but the first tenth):

* per turn, 4 calls;
* per extra call: (per turn with 8 calls - per turn with 4) / 4.

The ratios are agentrio's median over the floor's, measured in the same
run: the figure that holds from machine to machine. Targets: at most 2x
the floor in memory, 3x with the SQLite journal. ``--json`` prints the rows
for bench/report.py (see bench/_rows.py) instead of the table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import trio
from _measure import RUNS, Spread, cpu, header, repeat
from _rows import Row, emit, spread_row
from _workload import CALLS, scripted, spec

from agentrio import Runtime, SQLiteStore


@attrs.frozen
class FloorEvent:
    """One event of the floor's turn: what happened, and to which call."""

    type: str
    data: Any = None


@attrs.frozen
class Call:
    id: str
    name: str
    args: dict


async def _noop(args: dict) -> str:
    return "ok"


async def _reply(history: list, calls: int, turn: int) -> AsyncIterator[Any]:
    """The model: streams one chunk per call after a prompt, one text chunk
    after tool results, as the scripted model of the workload does."""
    if calls and history[-1][0] == "user":
        for i in range(calls):
            yield Call(f"c{turn}_{i}", "noop", {"i": i})
    else:
        yield "done"


async def _step(history: list, calls: int, turn: int, send: trio.MemorySendChannel) -> list[Call]:
    """One model request: stream the reply to the reader, append it."""
    await send.send(FloorEvent("message_start"))
    parts: list[Any] = []
    async for chunk in _reply(history, calls, turn):
        parts.append(chunk)
        await send.send(FloorEvent("message_update", chunk))
    history.append(("assistant", parts))
    await send.send(FloorEvent("message_end", parts))
    return [part for part in parts if isinstance(part, Call)]


async def _execute(batch: list[Call], send: trio.MemorySendChannel) -> list[str]:
    """Run the batch's calls at once; results in the model's order."""
    results: list[str] = [""] * len(batch)

    async def one(index: int, call: Call) -> None:
        await send.send(FloorEvent("tool_execution_start", call.id))
        results[index] = await _noop(call.args)
        await send.send(FloorEvent("tool_execution_end", (call.id, results[index])))

    async with trio.open_nursery() as nursery:
        for index, call in enumerate(batch):
            nursery.start_soon(one, index, call)
    return results


async def floor_turn(history: list, calls: int, turn: int, send: trio.MemorySendChannel) -> None:
    await send.send(FloorEvent("agent_start"))
    history.append(("user", "go"))
    while batch := await _step(history, calls, turn, send):
        for call, result in zip(batch, await _execute(batch, send), strict=True):
            history.append(("tool", call.id, result))
    await send.send(FloorEvent("agent_end"))


async def floor_conversation(turns: int, calls: int) -> list[float]:
    """The floor's conversation of ``turns`` turns, with one reader taking
    every event; the CPU time of each turn."""
    send, receive = trio.open_memory_channel[FloorEvent](1024)
    history: list = []
    times = []

    async def read() -> None:
        async for _ in receive:
            pass

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        async with send:
            for turn in range(turns):
                start = cpu()
                await floor_turn(history, calls, turn, send)
                times.append(cpu() - start)
    return times


async def agentrio_conversation(turns: int, calls: int, journal: Path | None) -> list[float]:
    """The same conversation through agentrio, one subscriber reading every
    event; in memory, or journaled to SQLite at ``journal``."""
    model = scripted(turns, calls)
    store = SQLiteStore(journal) if journal is not None else None
    times = []
    async with trio.open_nursery() as nursery, Runtime(store) as rt:
        agent = await rt.create(spec(model))

        async def read() -> None:
            async with agent.subscribe() as events:
                async for _ in events:
                    pass

        nursery.start_soon(read)
        await trio.lowlevel.checkpoint()  # the reader is subscribed
        for _ in range(turns):
            start = cpu()
            result = await agent.run("go")
            times.append(cpu() - start)
            model.requests.clear()
            assert result.stop_reason == "completed", result.stop_reason
    return times


def _steady(times: list[float]) -> float:
    return statistics.fmean(times[len(times) // 10 :])


async def figures(kind: str, turns: int) -> dict[str, float]:
    """Per turn (4 calls) and per extra call (4 -> 8) for one kind of program."""

    async def per_turn(calls: int) -> float:
        if kind == "floor":
            return _steady(await floor_conversation(turns, calls))
        if kind == "agentrio, memory":
            return _steady(await agentrio_conversation(turns, calls, None))
        with tempfile.TemporaryDirectory() as tmp:
            return _steady(await agentrio_conversation(turns, calls, Path(tmp) / "bench.db"))

    four, eight = await per_turn(CALLS), await per_turn(2 * CALLS)
    return {"per turn": four, "per extra call": (eight - four) / CALLS}


KINDS = ("floor", "agentrio, memory", "agentrio, SQLite")
#: The most each kind may cost, as a multiple of the floor.
TARGETS = {"agentrio, memory": "<= 2", "agentrio, SQLite": "<= 3"}


def measure(turns: int, runs: int) -> dict[str, dict[str, Spread]]:
    results = {}
    for kind in KINDS:
        print(f"  measuring {kind}...", file=sys.stderr, flush=True)
        results[kind] = repeat(figures, kind, turns, runs=runs)
    return results


def table(results: dict[str, dict[str, Spread]], turns: int) -> str:
    floor = results["floor"]
    lines = [
        f"| {turns}-turn conversation, one reader | per turn | vs floor | per extra call | vs floor |",
        "|---|---|---|---|---|",
    ]
    for kind, spreads in results.items():
        turn, call = spreads["per turn"], spreads["per extra call"]
        lines.append(
            f"| {kind} | {turn.show()} | {turn / floor['per turn']:.2f}x "
            f"| {call.show()} | {call / floor['per extra call']:.2f}x |"
        )
    return "\n".join(lines)


def rows(results: dict[str, dict[str, Spread]], turns: int) -> list[Row]:
    """Each kind's figures, with their ratio to the floor's."""
    floor = results["floor"]
    return [
        spread_row(
            "floor",
            f"{figure}, {turns}-turn conversation" if figure == "per turn" else figure,
            kind,
            spread.values,
            reference=None if kind == "floor" else "floor",
            reference_values=None if kind == "floor" else floor[figure].values,
            target=TARGETS.get(kind),
        )
        for kind, spreads in results.items()
        for figure, spread in spreads.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that it runs")
    parser.add_argument("--json", action="store_true", help="print the rows for bench/report.py")
    args = parser.parse_args()
    if args.quick:
        args.turns = 20
    if args.json:
        emit(rows(measure(args.turns, args.runs), args.turns))
        return
    header(
        f"agentrio against the floor, one turn = a prompt, {CALLS} parallel no-op calls, a text answer",
        args.runs,
    )
    print()
    print(table(measure(args.turns, args.runs), args.turns))


if __name__ == "__main__":
    main()
