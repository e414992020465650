"""What one turn of a conversation costs agentrio, and whether it grows.

    python bench/loop_overhead.py [--quick]

One turn is one ``agent.run``: a prompt, a model reply asking for 4
parallel calls of a no-op tool, the results, and a text answer, from a
``ScriptedModel`` (see bench/_workload.py). Figures, in CPU time:

* per turn at turn N: one conversation of the longest N, each run timed;
  the figure at N is the mean of the runs in its last tenth (at least 5
  runs) before N: runs 6–10, 181–200, 901–1,000;
* per parallel call: (per turn with 8 calls - per turn with 4) / 4, from
  two conversations of ``--marginal-turns`` runs, mean of all runs but the
  first tenth; short, so that the growth with history measured above
  (faster with 8 calls a turn) adds little;
* per run: a run whose model answers at once (one request, no tool), the
  fixed cost of a run, measured the same way;
* per turn with one subscriber reading every event, and per turn with a
  model that yields to trio between any two stream events (each costs a
  task switch, as a reply trickling in from the network does), measured
  the same way;
* idle agent: Python memory held per idle agent (tracemalloc, ``--agents``).
"""

from __future__ import annotations

import argparse
import statistics

from _measure import RUNS, header, repeat, size
from _workload import CALLS, conversation, idle_memory


def tail(times: list[float], end: int) -> float:
    """Mean CPU per run over the last tenth (at least 5 runs) up to run ``end``."""
    width = min(end, max(5, end // 10))
    return statistics.fmean(times[end - width : end])


async def growth(ends: list[int]) -> dict[str, float]:
    times = await conversation(max(ends))
    return {f"turn {end:,}": tail(times, end) for end in ends}


async def marginal(turns: int) -> dict[str, float]:
    def steady(times: list[float]) -> float:
        return statistics.fmean(times[turns // 10 :])

    four, eight = steady(await conversation(turns, CALLS)), steady(await conversation(turns, 2 * CALLS))
    bare = steady(await conversation(turns, 0))
    subscribed = steady(await conversation(turns, CALLS, subscribed=True))
    trickled = steady(await conversation(turns, CALLS, yield_every=1))
    return {
        "per parallel call (4 -> 8)": (eight - four) / CALLS,
        "per run (answered at once)": bare,
        "per turn, one subscriber reading every event": subscribed,
        "per turn, the model yielding between any two stream events": trickled,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--turns", default="10,200,1000", help="turn numbers to report (default: %(default)s)"
    )
    parser.add_argument("--marginal-turns", type=int, default=50)
    parser.add_argument("--agents", type=int, default=1000, help="idle agents for the memory figure")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that it runs")
    args = parser.parse_args()
    if args.quick:
        args.turns, args.marginal_turns, args.agents = "10,30", 20, 50
    ends = sorted(int(n) for n in args.turns.split(","))

    header(f"agentrio, one turn = a prompt, {CALLS} parallel no-op calls, a text answer", args.runs)
    print(f"\n| per turn of a {ends[-1]:,}-turn conversation, one agent.run each | CPU | vs turn {ends[0]} |")
    print("|---|---|---|")
    spreads = repeat(growth, ends, runs=args.runs)
    first = spreads[f"turn {ends[0]:,}"]
    for name, spread in spreads.items():
        print(f"| {name} | {spread.show()} | {spread / first:.2f}x |")

    print(f"\n| fixed and marginal costs ({args.marginal_turns} runs each) | CPU |")
    print("|---|---|")
    for name, spread in repeat(marginal, args.marginal_turns, runs=args.runs).items():
        print(f"| {name} | {spread.show()} |")

    memory = repeat(idle_memory, args.agents, runs=args.runs)["memory"]
    print(
        f"\n| idle agents (tracemalloc) | memory per agent |\n|---|---|\n| {args.agents:,} | {memory.show(size)} |"
    )


if __name__ == "__main__":
    main()
