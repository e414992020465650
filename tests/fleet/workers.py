"""Worker processes for the fleet's tests and bench: ``agentrio worker`` on
a PostgreSQL database, serving ``tests.fleet.chaos_spec``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[2]
SPEC = "tests.fleet.chaos_spec:SPEC"


async def start_worker(
    dsn: str,
    stderr: Path,
    *,
    log: Path | None = None,
    delay: float = 0.3,
    tool_delay: float | None = None,
    tool: bool = True,
    lease: float | None = 2.0,
    **options: object,
) -> trio.Process:
    """``agentrio worker --db dsn --spec SPEC``; ``options`` become flags
    (``max_sessions=3`` is ``--max-sessions 3``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLEET_DELAY": str(delay)}
    if log is not None:
        env["FLEET_LOG"] = str(log)
    if tool_delay is not None:
        env["FLEET_TOOL_DELAY"] = str(tool_delay)
    env["FLEET_TOOL"] = "1" if tool else "0"
    if lease is not None:
        options["lease"] = lease
    flags = [str(part) for name, value in options.items() for part in (f"--{name.replace('_', '-')}", value)]
    with open(stderr, "ab") as err:
        return await trio.lowlevel.open_process(
            [
                sys.executable,
                "-m",
                "agentrio",
                "worker",
                "--db",
                dsn,
                "--spec",
                SPEC,
                *flags,
            ],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


async def ready(worker: trio.Process, stderr: Path, timeout: float = 60) -> None:
    """Wait until the worker says it serves (it writes that once, on its
    stderr); fail with what it wrote if it ends first."""
    with trio.fail_after(timeout):
        while ": serving " not in stderr.read_text(errors="replace"):
            if worker.poll() is not None:
                raise AssertionError(f"the worker ended first:\n{stderr.read_text()}")
            await trio.sleep(0.05)


def model_intervals(log: Path, killed: dict[int, float]) -> dict[str, list[tuple[int, float, float]]]:
    """Each session's model requests as ``(pid, start, end)``, from the
    spec's log; a request of a killed process that never ended ends when it
    was killed."""
    starts: dict[tuple[int, str], list[float]] = {}
    intervals: dict[str, list[tuple[int, float, float]]] = {}
    for line in log.read_text().splitlines():
        kind, pid, session, at = line.split()
        if kind == "T":
            continue
        key = (int(pid), session)
        if kind == "S":
            starts.setdefault(key, []).append(float(at))
        else:
            intervals.setdefault(session, []).append((int(pid), starts[key].pop(0), float(at)))
    for (pid, session), open_starts in starts.items():
        for start in open_starts:
            assert pid in killed, f"process {pid} never ended a model request of {session}"
            intervals.setdefault(session, []).append((pid, start, killed[pid]))
    return intervals
