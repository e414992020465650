"""Timing helpers shared by the benchmarks: repeated runs, CPU time, median
and spread.

Every figure is CPU time from ``time.process_time()``: user plus system time
of *all threads of this process*, so work a framework hands to a thread pool
is counted, and time spent waiting for a shared machine is not. A measured
function runs ``RUNS`` times (at least 5), each in a fresh event loop after a
full garbage collection, and a figure is reported as the median with the
range of the runs (min–max), never the best run.
"""

from __future__ import annotations

import asyncio
import gc
import shlex
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import trio

RUNS = 5

#: CPU time of every thread of this process, in seconds.
cpu = time.process_time

Runner = Callable[..., Any]


def on_asyncio(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """``trio.run``'s signature for asyncio, to measure asyncio frameworks."""
    return asyncio.run(fn(*args))


@attrs.frozen
class Spread:
    """The values one figure took over repeated runs."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def show(self, fmt: Callable[[float], str] | None = None) -> str:
        """``median [min–max]``, each value shown by ``fmt`` (a duration by default)."""
        fmt = fmt or duration
        return f"{fmt(self.median)} [{fmt(min(self.values))}–{fmt(max(self.values))}]"

    def __truediv__(self, other: Spread) -> float:
        """The ratio of the medians."""
        return self.median / other.median


def repeat(
    measure: Callable[..., Awaitable[dict[str, float]]],
    *args: Any,
    runs: int = RUNS,
    runner: Runner = trio.run,
) -> dict[str, Spread]:
    """Run ``runner(measure, *args)`` ``runs`` times; ``measure`` times what it
    means to (with ``cpu()``) and returns named figures. Returns each
    figure's spread."""
    if runs < 5:
        raise ValueError("a median needs at least 5 runs")
    results = []
    for _ in range(runs):
        gc.collect()
        results.append(runner(measure, *args))
    return {name: Spread(tuple(result[name] for result in results)) for name in results[0]}


async def each(step: Callable[[Any], Awaitable[Any]], state: Any, count: int) -> list[float]:
    """Call ``state = await step(state)`` ``count`` times; return the CPU
    time of each call."""
    times = []
    for _ in range(count):
        start = cpu()
        state = await step(state)
        times.append(cpu() - start)
    return times


@contextmanager
def allocated() -> Iterator[Callable[[], tuple[int, int]]]:
    """Trace Python allocations inside the block. The yielded function
    returns (bytes still held since the block began, peak bytes above that
    start), after a full garbage collection."""
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()

    def held() -> tuple[int, int]:
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
        return current - start, peak - start

    try:
        yield held
    finally:
        tracemalloc.stop()


def duration(seconds: float) -> str:
    return _scaled(seconds, (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)))


def size(nbytes: float) -> str:
    return _scaled(nbytes, (("MB", 2**20), ("KB", 2**10), ("B", 1)))


def _scaled(value: float, units: tuple[tuple[str, float], ...]) -> str:
    """Three significant digits in the largest unit that keeps a digit before the point."""
    unit, scale = next(((unit, scale) for unit, scale in units if abs(value) >= scale), units[-1])
    scaled = value / scale
    return f"{scaled:.0f} {unit}" if abs(scaled) >= 100 else f"{scaled:.3g} {unit}"


def header(title: str, runs: int = RUNS) -> None:
    """Print what was measured and the exact command that measures it again."""
    print(title)
    print(f"  command: python {shlex.join(sys.argv)}")
    print(f"  python {sys.version.split()[0]}, CPU time of all threads (time.process_time),")
    print(f"  median [min–max] of {runs} runs, each in a fresh event loop")
