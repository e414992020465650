"""Every benchmark in one run, as one table, written into the docs' benchmark page.

    python bench/report.py [--quick] [--only floor,peers,...] [--page docs/benchmarks.md] [--no-write]

Runs each benchmark of ``BENCHES`` as a process of its own (``python
bench/NAME.py --json``, with ``--quick`` when given), in the same run, so
every ratio compares figures measured minutes apart on the same machine.
Each benchmark prints its rows as JSON (bench/_rows.py): a figure's median
and range over at least 5 runs, in CPU time, and its ratio to the floor or
the peer it is measured against. The report prints them as markdown tables,
one per benchmark, then the targets met and missed, and writes the same
text into the benchmark page between ``<!-- bench:start -->`` and
``<!-- bench:end -->``. Nothing else on the page changes; a page without
the markers gets them at its end, and a missing page is created with them.

A benchmark that is absent, or that does not take ``--json``, or that fails,
is a row saying so; a peer that is not installed (``pip install -e
'.[bench]'``) is a row saying "not installed". ``--quick`` runs every
benchmark at its smallest sizes to check that the whole chain works; its
figures mean little, so it writes the page only when ``--page`` names one.

Exit status: 0 when the report was made, even with targets missed or
benchmarks failing (the table says which); 2 on a usage error, or a page
whose markers are not one start followed by one end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from _measure import duration, size
from _rows import Row, missing_row

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"

#: The benchmarks in the report, in its order: (name, script).
BENCHES = (
    ("floor", "floor.py"),
    ("peers", "peers.py"),
    ("scale", "scale.py"),
    ("journal", "journal.py"),
    ("pg_journal", "pg_journal.py"),
    ("stream_scale", "stream_scale.py"),
    ("gateway_fanout", "gateway_fanout.py"),
    ("instructions", "instructions.py"),
)

START, END = "<!-- bench:start -->", "<!-- bench:end -->"
DEFAULT_PAGE = ROOT / "docs" / "benchmarks.md"
NEW_PAGE = """# Benchmarks

Every figure below comes from one run of `python bench/report.py`: CPU time,
the median and range of at least 5 runs, and each ratio taken between
figures measured in that same run.

"""


class PageError(Exception):
    """The page's markers are not one start followed by one end."""


def run_bench(name: str, script: str, quick: bool) -> list[Row]:
    """The rows of one benchmark, run as a process of its own; a row that
    says why when there are none."""
    path = BENCH / script
    if not path.is_file():
        return [missing_row(name, "-", "-", f"not available: bench/{script} does not exist")]
    argv = [sys.executable, str(path), "--json", *(["--quick"] if quick else [])]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH), os.environ.get("PYTHONPATH", "")]),
    }
    print(f"  {name}: {shlex.join(['python', f'bench/{script}', *argv[2:]])}", file=sys.stderr, flush=True)
    # Its progress is shown as it goes (a benchmark may take many minutes);
    # its last line is kept to say why it failed, if it does.
    last_said = ""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        with subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.PIPE, text=True
        ) as process:
            assert process.stderr is not None
            for line in process.stderr:
                print(f"    {line.rstrip()}", file=sys.stderr, flush=True)
                last_said = line.strip() or last_said
        out.seek(0)
        printed = out.read().strip().splitlines()
    if process.returncode == 2 and "unrecognized arguments: --json" in last_said:
        return [missing_row(name, "-", "-", f"not available: bench/{script} does not take --json yet")]
    try:
        rows = [Row.from_json(row) for row in json.loads(printed[-1])]
    except (IndexError, ValueError, TypeError, KeyError):
        why = last_said or f"exit status {process.returncode}"
        return [missing_row(name, "-", "-", f"failed: {why}")]
    return rows


def show(value: float, unit: str) -> str:
    """One value in its unit, three significant digits."""
    shown: dict[str, Callable[[float], str]] = {
        "s": duration,
        "B": size,
        "/s": lambda v: f"{v:,.0f}/s",
        "events/s": lambda v: f"{v:,.0f} events/s",
        "instr": lambda v: f"{v / 1e3:,.1f} k instr",
    }
    fmt = shown.get(unit)
    return fmt(value) if fmt is not None else f"{value:.3g} {unit}"


def figure(row: Row) -> str:
    if row.median is None or row.range is None:
        return row.note or "-"
    low, high = row.range
    return f"{show(row.median, row.unit)} [{show(low, row.unit)}–{show(high, row.unit)}]"


def target(row: Row) -> str:
    met = row.met()
    if met is None:
        return ""
    bound = row.target.replace("<=", "≤").replace(">=", "≥") if row.target else ""
    suffix = "×" if row.reference is not None else f" {row.unit}"
    return f"{bound}{suffix}: {'met' if met else 'MISSED'}"


def table(rows: Iterable[Row]) -> list[str]:
    lines = [
        "| figure | measured | median [min–max] | against | ratio | target |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        ratio = f"{row.ratio:.2f}×" if row.ratio is not None else ""
        lines.append(
            f"| {row.name} | {row.ours} | {figure(row)} | {row.reference or ''} | {ratio} | {target(row)} |"
        )
    return lines


def report(results: dict[str, list[Row]], command: str) -> str:
    """The whole report, as markdown."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        (
            f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `{command}`: "
            f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
            f"load average {load:.1f}. CPU time of the whole process (`time.process_time()`), "
            "median [min–max] of at least 5 runs; a ratio is the measured figure's median over the "
            "median of what it is measured against, in the same run."
        ),
        "",
    ]
    for name, rows in results.items():
        lines += [f"### {name}", "", *table(rows), ""]
    judged = [row for rows in results.values() for row in rows if row.met() is not None]
    if judged:
        lines += ["### targets", ""]
        for row in judged:
            against = f" against {row.reference}" if row.reference else ""
            lines.append(f"- {row.bench}: {row.name}, {row.ours}{against}: {target(row)}")
        lines.append("")
    return "\n".join(lines)


def spliced(old: str | None, text: str) -> str:
    """The page ``old`` (``None``: none yet) with ``text`` between its
    markers and the rest as it was; markers are added at the end of a page
    without them, and a new page gets a title, a line and the markers."""
    block = f"{START}\n{text.rstrip()}\n{END}"
    if old is None:
        return f"{NEW_PAGE}{block}\n"
    starts, ends = old.count(START), old.count(END)
    if starts == ends == 0:
        return f"{old.rstrip()}\n\n{block}\n" if old.strip() else f"{block}\n"
    if starts != 1 or ends != 1 or old.index(START) > old.index(END):
        raise PageError(f"expected one {START} followed by one {END}")
    before, rest = old.split(START)
    return f"{before}{block}{rest.split(END)[1]}"


def read_page(page: Path) -> str | None:
    return page.read_text(encoding="utf-8") if page.exists() else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="smallest sizes: check the chain, not the figures"
    )
    parser.add_argument(
        "--only", help="comma-separated benchmarks (default: all of " + ", ".join(n for n, _ in BENCHES) + ")"
    )
    parser.add_argument(
        "--page", type=Path, help=f"the page to write (default: {DEFAULT_PAGE.relative_to(ROOT)})"
    )
    parser.add_argument("--no-write", action="store_true", help="print the report, write no page")
    args = parser.parse_args()
    known = dict(BENCHES)
    chosen = args.only.split(",") if args.only else list(known)
    unknown = [name for name in chosen if name not in known]
    if unknown:
        print(f"report: unknown benchmark {', '.join(unknown)} (known: {', '.join(known)})", file=sys.stderr)
        return 2
    page = None if args.no_write or (args.quick and args.page is None) else (args.page or DEFAULT_PAGE)
    if page is not None:
        try:
            spliced(read_page(page), "")  # a page it could not write is said before the hour of benchmarks
        except PageError as error:
            print(f"report: {page}: {error}", file=sys.stderr)
            return 2
    command = shlex.join(["python", "bench/report.py", *sys.argv[1:]])
    results = {name: run_bench(name, known[name], args.quick) for name in chosen}
    text = report(results, command)
    print(text)
    if page is not None:
        new = spliced(read_page(page), text)
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(new, encoding="utf-8")
        print(f"written into {page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
