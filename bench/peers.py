"""agentrio against pydantic-ai, openai-agents and langgraph, same work, same run.

    pip install -e '.[bench]' && python bench/peers.py [--quick] [--json]

Every framework does the same work through its public API with a scripted
model: one turn is one run of a conversation, a prompt, a model reply
asking for 4 parallel calls of a no-op tool, the results, and a text answer
("done"). As under a chat UI, the model streams each reply (one chunk per
call, one for the text) and one reader takes every event the framework
offers for the run: agentrio's subscriber, pydantic-ai's
event_stream_handler, openai-agents' ``Runner.run_streamed(...).stream_events()``,
langgraph's ``astream`` with the messages, updates and values modes. What
each framework does per turn is printed with the results.
Figures, in CPU time:

* per turn, N-turn conversation (``--turns``): the mean CPU of a run over
  a whole conversation of N runs, from an empty history;
* per turn, last W of L turns (``--long``, ``--window``): the mean CPU of
  runs L-W+1 to L. agentrio holds all L runs. A peer carries its history
  from run to run itself, so its first L-W turns are copies of one real
  turn (fresh call ids): the same history, without paying 5 times for the
  runs that built it;
* K agents, one tool turn each (``--agents``): K one-turn conversations at
  once, each with one reader taking every event. The two sides do not do
  the same work, and agentrio does more: it enters a Runtime, creates K
  agents (each with its own AgentSpec and ScriptedModel, its own session
  in the in-memory store that journals every record, its own actor,
  mailbox and event log), runs one turn of each, and disposes of them all
  by leaving the Runtime; the Tool is one object they share. A peer makes
  one agent (or compiles one graph) and runs its K conversations on it,
  each from an empty history, gathering the K histories they return.

The frameworks take turns: each round runs every framework once, so a
machine that drifts during the benchmark weighs on all of them alike. They
share one process, which imports every one of them (about 290,000 objects
the garbage collector tracks): each full collection walks all of them,
whichever framework's allocations set it off. With many agents at once,
those collections are most of the CPU of the agents row, for agentrio as
for the peers. The ratios are the peer's median over agentrio's. Targets:
per turn, at least 30x for pydantic-ai and openai-agents and 10x for
langgraph; for the agents run at once, 10x for every peer. ``--json``
prints the rows for bench/report.py (see bench/_rows.py) instead of the
tables; a peer that is not installed has rows that say so.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import sys
from collections.abc import Callable
from functools import partial
from types import ModuleType

import attrs
import trio
from _measure import RUNS, Runner, Spread, cpu, each, header, on_asyncio
from _rows import Row, emit, missing_row, spread_row
from _workload import CALLS, conversation, crowd

PEERS = ("_pydantic_ai", "_openai_agents", "_langgraph")
#: The least each peer's per-turn figure must be, as a multiple of agentrio's.
TURN_TARGETS = {"pydantic-ai": ">= 30", "openai-agents": ">= 30", "langgraph": ">= 10"}
#: The same for many agents run at once.
CROWD_TARGET = ">= 10"


@attrs.frozen
class Framework:
    """One framework's side of the benchmark: how it holds a conversation
    and runs many at once, and the event loop it runs on."""

    name: str
    work: str
    conversation: Callable  # (turns, prefill, calls) -> CPU of each run
    crowd: Callable  # (count, calls) -> CPU of them all
    runner: Runner = on_asyncio


async def _agentrio_conversation(turns: int, prefill: int, calls: int) -> list[float]:
    return (await conversation(prefill + turns, calls, True))[prefill:]


async def _agentrio_crowd(count: int, calls: int) -> float:
    return await crowd(count, True)


AGENTRIO = Framework(
    "agentrio",
    "agent.run(prompt) on one agent, which keeps the history; ScriptedModel streamed in chunks, "
    "each reply handed over in one burst (yield_every=0); 4 calls of a Tool in parallel; one subscriber reading every event; "
    "many agents: one Runtime, an agent and its session created for each conversation and disposed of at the end",
    _agentrio_conversation,
    _agentrio_crowd,
    trio.run,
)


async def _peer_conversation(peer: ModuleType, turns: int, prefill: int, calls: int) -> list[float]:
    """CPU of each of ``turns`` runs, after a history of ``prefill`` turns:
    deep copies of one real turn, with their own ids."""
    turn = peer.turn(calls)
    template = await turn([])
    history = [peer.copied(item, k) for k in range(prefill) for item in template]
    return await each(turn, history, turns)


async def _peer_crowd(peer: ModuleType, count: int, calls: int) -> float:
    """CPU of ``count`` one-turn conversations run at once, sharing one agent."""
    start = cpu()
    turn = peer.turn(calls)
    await asyncio.gather(*(turn([]) for _ in range(count)))
    return cpu() - start


def peers(names: list[str]) -> tuple[list[Framework], dict[str, str]]:
    """The peers that are installed, and a note for each that is not."""
    found: list[Framework] = []
    missing: dict[str, str] = {}
    for module in PEERS:
        name = module.strip("_").replace("_", "-")
        if name not in names:
            continue
        try:
            peer = importlib.import_module(module)
        except ImportError as error:
            missing[name] = f"not installed ({error.name}); pip install -e '.[bench]'"
            continue
        found.append(
            Framework(peer.NAME, peer.WORK, partial(_peer_conversation, peer), partial(_peer_crowd, peer))
        )
    return found, missing


async def _per_turn(framework: Framework, turns: int, prefill: int) -> dict[str, float]:
    times = await framework.conversation(turns, prefill, CALLS)
    return {"cpu": sum(times) / len(times)}


async def _all_at_once(framework: Framework, count: int) -> dict[str, float]:
    return {"cpu": await framework.crowd(count, CALLS)}


def measure(frameworks: list[Framework], rows: dict[str, tuple], runs: int) -> dict[str, dict[str, Spread]]:
    """Each row's figure for each framework, over ``runs`` rounds in which
    every framework runs once in turn: a machine that speeds up or slows
    down during the benchmark weighs on every framework alike."""
    if runs < 5:
        raise ValueError("a median needs at least 5 runs")
    values: dict[str, dict[str, list[float]]] = {f.name: {row: [] for row in rows} for f in frameworks}
    for row, (measured, *args) in rows.items():
        for run in range(runs):
            for framework in frameworks:
                print(f"  {row}: round {run + 1} of {runs}: {framework.name}...", file=sys.stderr, flush=True)
                gc.collect()
                values[framework.name][row].append(framework.runner(measured, framework, *args)["cpu"])
    return {name: {row: Spread(tuple(v)) for row, v in figures.items()} for name, figures in values.items()}


def rows(table: dict[str, dict[str, Spread]], missing: dict[str, str]) -> list[Row]:
    """agentrio's figures, then each peer's with its ratio to agentrio's."""
    ours = table["agentrio"]
    result = [spread_row("peers", row, "agentrio", spread.values) for row, spread in ours.items()]
    for name, figures in table.items():
        if name == "agentrio":
            continue
        for row, spread in figures.items():
            target = TURN_TARGETS.get(name) if row.startswith("per turn") else CROWD_TARGET
            result.append(
                spread_row(
                    "peers",
                    row,
                    name,
                    spread.values,
                    reference="agentrio",
                    reference_values=ours[row].values,
                    target=target,
                )
            )
    for name, note in missing.items():
        result += [missing_row("peers", row, name, note) for row in ours]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns of the first conversation")
    parser.add_argument("--long", type=int, default=1000, help="turns of the long conversation")
    parser.add_argument("--window", type=int, default=100, help="its last turns that are timed")
    parser.add_argument("--agents", type=int, default=1000, help="agents running one turn each")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument(
        "--frameworks",
        default="agentrio,pydantic-ai,openai-agents,langgraph",
        help="comma-separated (default: %(default)s)",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that it runs")
    parser.add_argument("--json", action="store_true", help="print the rows for bench/report.py")
    args = parser.parse_args()
    if args.quick:
        args.turns, args.long, args.window, args.agents = 10, 20, 5, 20
    names = args.frameworks.split(",")
    found, missing = peers(names)
    frameworks = [AGENTRIO, *found]
    rows_measured = {
        f"per turn, {args.turns:,}-turn conversation": (_per_turn, args.turns, 0),
        f"per turn, last {args.window:,} of {args.long:,} turns": (
            _per_turn,
            args.window,
            args.long - args.window,
        ),
        f"{args.agents:,} agents, one tool turn each": (_all_at_once, args.agents),
    }
    if args.json:
        emit(rows(measure(frameworks, rows_measured, args.runs), missing))
        return

    header(
        f"agentrio and its peers, one turn = a prompt, {CALLS} parallel no-op calls, a text answer", args.runs
    )
    for framework in frameworks:
        print(f"  {framework.name}: {framework.work}")
    for name, note in missing.items():
        print(f"  {name}: {note}")

    table = measure(frameworks, rows_measured, args.runs)

    print()
    print("| | " + " | ".join(table) + " |")
    print("|---" * (len(table) + 1) + "|")
    for row in rows_measured:
        print(f"| {row} | " + " | ".join(table[name][row].show() for name in table) + " |")
    if found:
        print("\npeer / agentrio (ratio of medians)\n")
        print("| | " + " | ".join(peer.name for peer in found) + " |")
        print("|---" * (len(found) + 1) + "|")
        for row in rows_measured:
            ours = table["agentrio"][row]
            print(f"| {row} | " + " | ".join(f"{table[peer.name][row] / ours:.1f}x" for peer in found) + " |")


if __name__ == "__main__":
    main()
