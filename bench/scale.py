"""What many agents cost agentrio: idle ones, and ones running at once.

    python bench/scale.py [--quick] [--json]

* idle agents (``--idle``): one Runtime creates N agents that never run;
  CPU per creation, CPU to leave the Runtime (which disposes them all), and
  Python memory held per agent;
* running agents (``--running``): one Runtime creates N agents and runs one
  turn of each at once (a prompt, 4 parallel no-op tool calls, a text
  answer, see bench/_workload.py); CPU per agent from entering the Runtime
  to leaving it, and the peak of Python memory over the whole;
* waking agents (``--wake``): an idle agent hibernates (no task, no
  mailbox); CPU per wake-up of N hibernating agents (a call that needs the
  actor, the actor started for it, the agent hibernating again), as a ratio
  to a creation, to the same call to an awake agent, and to a one-turn run
  of an awake agent, all in the same run (``_workload.wakes``).

Memory is traced by tracemalloc in one more run of its own (tracing slows
everything down): it counts bytes, not time, and five runs agree to three
digits, so one is enough. Target: an idle agent holds at most 2 KB; the
memory of one that never hibernates (``hibernate_after=None``) is shown
beside it.
``--json`` prints the rows for bench/report.py (see bench/_rows.py).
"""

from __future__ import annotations

import argparse

import trio
from _measure import RUNS, duration, header, repeat, size
from _rows import Row, emit, spread_row
from _workload import CALLS, crowd, crowd_memory, idle, idle_memory, wakes


async def _per_run(count: int) -> dict[str, float]:
    return {"cpu": await crowd(count) / count}


#: The most Python memory an idle agent may hold, in bytes.
IDLE_BYTES = 2048


#: What a wake-up is compared with, in the same run (``_workload.wakes``).
WAKE_REFERENCES = (
    ("create", "a creation"),
    ("call", "the same call, awake"),
    ("turn", "a one-turn run, awake"),
)


def rows(idle_counts: list[int], running_counts: list[int], wake_counts: list[int], runs: int) -> list[Row]:
    result = []
    for count in idle_counts:
        cpu = repeat(idle, count, runs=runs)
        memory = trio.run(idle_memory, count)["memory"]
        awake = trio.run(idle_memory, count, None)["memory"]
        name = f"{count:,} idle agents"
        result += [
            spread_row("scale", f"{name}: create, per agent", "agentrio", cpu["create"].values),
            spread_row("scale", f"{name}: leave the Runtime", "agentrio", cpu["exit"].values),
            spread_row(
                "scale", f"{name}: memory per agent", "agentrio", [memory], "B", target=f"<= {IDLE_BYTES}"
            ),
            spread_row("scale", f"{name}: memory per agent", "agentrio, never hibernating", [awake], "B"),
        ]
    for count in running_counts:
        cpu = repeat(_per_run, count, runs=runs)["cpu"]
        name = f"{count:,} agents at once, one turn of {CALLS} calls each: CPU per agent"
        result.append(spread_row("scale", name, "agentrio", cpu.values))
    for count in wake_counts:
        cpu = repeat(wakes, count, runs=runs)
        name = f"{count:,} hibernating agents: wake-up, per agent"
        result += [
            spread_row(
                "scale",
                name,
                "agentrio",
                cpu["wake"].values,
                reference=label,
                reference_values=cpu[key].values,
            )
            for key, label in WAKE_REFERENCES
        ]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", default="1000,3000,10000", help="idle agent counts (default: %(default)s)")
    parser.add_argument(
        "--running", default="100,1000,3000", help="running agent counts (default: %(default)s)"
    )
    parser.add_argument("--wake", default="1000", help="hibernating agent counts (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that it runs")
    parser.add_argument("--json", action="store_true", help="print the rows for bench/report.py")
    args = parser.parse_args()
    if args.quick:
        args.idle, args.running, args.wake = "100,300", "10,30", "100"
    if args.json:
        counts = ([int(n) for n in arg.split(",") if n] for arg in (args.idle, args.running, args.wake))
        emit(rows(*counts, args.runs))
        return

    header("agentrio at scale", args.runs)
    print("\n| idle agents | create, per agent | leave the Runtime | memory per agent | never hibernating |")
    print("|---|---|---|---|---|")
    for count in (int(n) for n in args.idle.split(",")):
        cpu = repeat(idle, count, runs=args.runs)
        memory = trio.run(idle_memory, count)["memory"]
        awake = trio.run(idle_memory, count, None)["memory"]
        print(
            f"| {count:,} | {cpu['create'].show()} | {cpu['exit'].show()} | {size(memory)} | {size(awake)} |"
        )

    print(f"\n| running agents, one turn of {CALLS} calls each | CPU per agent | peak memory | per agent |")
    print("|---|---|---|---|")
    for count in (int(n) for n in args.running.split(",")):
        cpu = repeat(_per_run, count, runs=args.runs)["cpu"]
        peak = trio.run(crowd_memory, count)["peak"]
        print(f"| {count:,} | {cpu.show()} | {size(peak)} | {size(peak / count)} |")
    print(
        f"\n(agents per second at the largest count: {1 / cpu.median:,.0f}; "
        f"{duration(cpu.median * count)} of CPU in all)"
    )

    print(
        "\n| hibernating agents | wake-up, per agent | "
        + " | ".join(f"÷ {label}" for _, label in WAKE_REFERENCES)
        + " |"
    )
    print("|---|---|" + "---|" * len(WAKE_REFERENCES))
    for count in (int(n) for n in args.wake.split(",") if n):
        woken = repeat(wakes, count, runs=args.runs)
        ratios = " | ".join(
            f"{woken['wake'] / woken[key]:.2f}× ({woken[key].show()})" for key, _ in WAKE_REFERENCES
        )
        print(f"| {count:,} | {woken['wake'].show()} | {ratios} |")


if __name__ == "__main__":
    main()
