"""What tracing costs the agent loop: the run of ``bench/loop_overhead.py``
(``--turns`` model requests of 4 parallel no-op tool calls each) untraced,
traced into the OpenTelemetry SDK's in-memory exporter, and traced with
content capture, in the same process.

    pip install -e '.[test]' && python bench/tracing_overhead.py [--turns 1000] [--runs 7]

The modes alternate within each of ``--runs`` rounds; per mode, CPU time of
the whole run per turn (each turn makes 1 ``chat`` and 4 ``execute_tool``
spans; each run 1 ``invoke_agent``), median and spread (min-max) over the
rounds, and the ratio of medians to the untraced run. ``--modes off`` runs
only the untraced loop, which works on a tree without tracing too: that is
how to check that the hooks cost nothing while tracing is off.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from loop_overhead import with_agentrio


def _exporter():
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def measure(mode: str, turns: int) -> float:
    """CPU seconds per turn of one run in ``mode``."""
    exporter = None
    if mode != "off":
        import agentrio

        provider, exporter = _exporter()
        agentrio.instrument(provider, capture_content=mode == "content")
    try:
        start = time.process_time()
        trio.run(with_agentrio, turns)
        used = time.process_time() - start
    finally:
        if exporter is not None:
            agentrio.uninstrument()
            assert len(exporter.get_finished_spans()) == 1 + turns + 4 * (turns - 1)
    return used / turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--modes", default="off,on", help="comma-separated: off, on, content (content grows with history: use fewer turns)")
    args = parser.parse_args()
    modes = args.modes.split(",")
    figures: dict[str, list[float]] = {mode: [] for mode in modes}
    measure(modes[0], min(args.turns, 100))  # warm up imports and caches
    for _ in range(args.runs):
        for mode in modes:
            figures[mode].append(measure(mode, args.turns) * 1e6)
    base = statistics.median(figures[modes[0]])
    print(f"{args.turns:,} turns x 4 parallel no-op calls, CPU us/turn over {args.runs} runs")
    for mode, times in figures.items():
        median = statistics.median(times)
        print(
            f"  {mode:8} median {median:8.1f}  spread {min(times):.1f}-{max(times):.1f}"
            f"  x{median / base:.2f} of {modes[0]}"
        )


if __name__ == "__main__":
    main()
