"""What supervising a subprocess costs: ``run_process`` against trio's own
``trio.run_process``, on the same trivial command, in the same run; and
what a sandbox adds per command, for each mechanism that works here.

    python bench/process_overhead.py [--calls 20] [--runs 7]

Each run starts ``--calls`` commands one after the other (``true``) every
way, alternating. Per call: wall time, and CPU time of this process and of
its children (the shim, the command); medians and spread over ``--runs``
runs, and the ratio of the medians. ``run_process`` starts a supervising
shim (a bare ``python -I -S``) per command, which is most of its cost. The
sandboxed ways (``Sandbox()``: workspace-write, no network, in a temporary
workspace) add the confinement and a private temporary directory made and
removed per command; their overhead is against unsandboxed ``run_process``.
"""

from __future__ import annotations

import argparse
import functools
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrio.tools.process import run_process
from agentrio.tools.sandbox import MECHANISMS, Sandbox, _unusable


def cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def measure(start, calls: int) -> tuple[float, float]:
    wall, used = time.perf_counter(), cpu()
    for _ in range(calls):
        await start()
    return (time.perf_counter() - wall) / calls, (cpu() - used) / calls


async def main(calls: int, runs: int) -> None:
    async def ours(**options) -> None:
        await run_process(["true"], **options)

    async def trios() -> None:
        await trio.run_process(["true"])

    workspace = tempfile.mkdtemp(prefix="agentrio-bench-")
    ways = {"agentrio run_process": ours, "trio.run_process": trios}
    for mechanism in MECHANISMS:
        if (why := _unusable(mechanism)) is not None:
            print(f"(no {mechanism} here: {why})")
            continue
        confinement = Sandbox(mechanism=mechanism).confine(workspace)
        ways[f"  + {mechanism}"] = functools.partial(ours, cwd=workspace, sandbox=confinement)
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    try:
        for _ in range(runs):
            for name, start in ways.items():
                figures[name].append(await measure(start, calls))
    finally:
        shutil.rmtree(workspace)
    medians = {}
    for name, results in figures.items():
        walls, cpus = [w * 1000 for w, _ in results], [c * 1000 for _, c in results]
        medians[name] = statistics.median(walls), statistics.median(cpus)
        print(
            f"{name:22} wall {medians[name][0]:6.1f} ms/call ({min(walls):.1f}-{max(walls):.1f}), "
            f"CPU {medians[name][1]:6.1f} ms/call ({min(cpus):.1f}-{max(cpus):.1f})"
        )
    ours, peer = medians["agentrio run_process"], medians["trio.run_process"]
    print(f"ratio (agentrio / trio): wall {ours[0] / peer[0]:.1f}x, CPU {ours[1] / peer[1]:.1f}x")
    for name, (wall, used) in medians.items():
        if name.startswith("  + "):
            print(
                f"sandbox {name[4:]}: +{wall - ours[0]:.1f} ms wall, +{used - ours[1]:.1f} ms CPU per command"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    trio.run(main, options.calls, options.runs)
