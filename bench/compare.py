"""Two checkouts of agentrio, one workload, taking turns.

    python bench/compare.py OLD_TREE NEW_TREE [--rounds 6] [--unsubscribed]

Each round runs a fresh process of each tree in turn (the old first), and
each process holds ``--conversations`` conversations of ``--turns`` turns
(``bench/_workload.py``: a prompt, 4 parallel no-op calls, a text answer,
one subscriber reading every event unless ``--unsubscribed``). A tree's
figure is the median [min–max] of its conversations' mean CPU per turn;
taking turns makes a machine that drifts weigh on both trees alike, which
two benchmark runs one after the other do not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_ONE_PROCESS = """
import json, sys, trio
sys.path.insert(0, {bench!r})
from _workload import CALLS, conversation
runs = []
for _ in range({conversations}):
    times = trio.run(conversation, {turns}, CALLS, {subscribed})
    runs.append(sum(times) / len(times))
print(json.dumps(runs))
"""


def per_turn(tree: Path, args: argparse.Namespace) -> list[float]:
    """CPU per turn of each conversation held by one process of ``tree``."""
    code = _ONE_PROCESS.format(
        bench=str(tree / "bench"),
        conversations=args.conversations,
        turns=args.turns,
        subscribed=not args.unsubscribed,
    )
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="a checkout of agentrio (its root)")
    parser.add_argument("new", type=Path, help="another checkout")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--conversations", type=int, default=3, help="per process")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--unsubscribed", action="store_true", help="no subscriber")
    args = parser.parse_args()
    for tree in (args.old, args.new):
        if (
            not (tree / "agentrio" / "__init__.py").is_file()
            or not (tree / "bench" / "_workload.py").is_file()
        ):
            parser.error(f"{tree}: not a checkout of agentrio with bench/_workload.py")
    trees = {"old": args.old, "new": args.new}
    figures: dict[str, list[float]] = {"old": [], "new": []}
    for round_ in range(args.rounds):
        for which, tree in trees.items():
            print(f"  round {round_ + 1} of {args.rounds}: {which} ({tree})...", file=sys.stderr, flush=True)
            figures[which] += per_turn(tree, args)
    print(f"per turn of a {args.turns}-turn conversation, {'no' if args.unsubscribed else 'one'} subscriber;")
    print(
        f"CPU, median [min–max] of {args.rounds * args.conversations} conversations, the trees taking turns"
    )
    for which, values in figures.items():
        median, low, high = (f"{v * 1e6:.0f}" for v in (statistics.median(values), min(values), max(values)))
        print(f"  {which} ({trees[which]}): {median} µs [{low}–{high}]")
    print(f"  new / old: {statistics.median(figures['new']) / statistics.median(figures['old']):.3f}")


if __name__ == "__main__":
    main()
