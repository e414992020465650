"""Instructions per turn, counted by callgrind: the figure that does not drift.

    python bench/instructions.py [--quick] [--json]

The turn of bench/floor.py (a prompt, parallel no-op calls, a text answer,
one reader taking every event), for the floor and for agentrio in memory and
with the SQLite journal, each run under ``valgrind --tool=callgrind`` in a
process of its own. A process holding a conversation of N turns minus one
holding S turns (S < N, so the first turns' warm-up and the imports cancel
out), over N - S, is the instructions per turn; with 8 calls instead of 4,
the difference over 4 is the instructions per extra call. CPU time on a
shared machine varies from run to run; instruction counts vary by well
under a percent, so one run of each is reported (its range is itself).
Needs valgrind (``apt-get install valgrind``); without it, and with
``--quick``, the rows say why there is no figure.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import trio
from _rows import Row, emit, missing_row, spread_row

BENCH = Path(__file__).resolve().parent
KINDS = ("floor", "agentrio, memory", "agentrio, SQLite")
TARGETS = {"agentrio, memory": "<= 2", "agentrio, SQLite": "<= 3"}


def probe(kind: str, turns: int, calls: int) -> None:
    """The conversation counted under callgrind (run in the probe process)."""
    import tempfile

    import floor

    if kind == "floor":
        trio.run(floor.floor_conversation, turns, calls)
    elif kind == "agentrio, memory":
        trio.run(floor.agentrio_conversation, turns, calls, None)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            trio.run(floor.agentrio_conversation, turns, calls, Path(tmp) / "bench.db")


def counted(kind: str, turns: int, calls: int) -> int:
    """Instructions of a whole process holding a conversation of ``turns`` turns."""
    argv = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--probe",
        kind,
        str(turns),
        str(calls),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same dict layouts in every process
    print(f"  callgrind: {kind}, {turns} turns of {calls} calls...", file=sys.stderr, flush=True)
    done = subprocess.run(argv, check=True, capture_output=True, text=True, env=env)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count: {done.stderr[-300:]}")
    return int(found.group(1))


def rows(start: int, end: int, calls: tuple[int, int]) -> list[Row]:
    few, many = calls
    per_turn: dict[str, dict[int, float]] = {}
    for kind in KINDS:
        per_turn[kind] = {
            n: (counted(kind, end, n) - counted(kind, start, n)) / (end - start) for n in (few, many)
        }
    result = []
    floor = per_turn["floor"]
    for kind, figures in per_turn.items():
        pairs = (
            (f"instructions per turn, {few} calls", figures[few], floor[few]),
            (
                "instructions per extra call",
                (figures[many] - figures[few]) / (many - few),
                (floor[many] - floor[few]) / (many - few),
            ),
        )
        for name, value, reference in pairs:
            theirs = None if kind == "floor" else [reference]
            result.append(
                spread_row(
                    "instructions",
                    name,
                    kind,
                    [value],
                    "instr",
                    reference=None if kind == "floor" else "floor",
                    reference_values=theirs,
                    target=TARGETS.get(kind),
                )
            )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=105, help="turns of the longer conversation")
    parser.add_argument("--skip", type=int, default=5, help="turns of the shorter one")
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that it runs")
    parser.add_argument("--json", action="store_true", help="print the rows for bench/report.py")
    parser.add_argument("--probe", nargs=3, metavar=("KIND", "TURNS", "CALLS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        kind, turns, calls = args.probe
        probe(kind, int(turns), int(calls))
        return
    if shutil.which("valgrind") is None or args.quick:
        why = "skipped by --quick (minutes under callgrind)" if args.quick else "valgrind is not installed"
        table = [missing_row("instructions", "instructions per turn", kind, why, "instr") for kind in KINDS]
    else:
        table = rows(args.skip, args.turns, (4, 8))
    if args.json:
        emit(table)
        return
    print(f"instructions (callgrind), conversations of {args.turns} minus {args.skip} turns")
    for row in table:
        ratio = f"  {row.ratio:.2f}x the floor" if row.ratio is not None else ""
        value = f"{row.median:,.0f}" if row.median is not None else row.note
        print(f"  {row.ours:<18} {row.name:<30} {value}{ratio}")


if __name__ == "__main__":
    main()
