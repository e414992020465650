"""What tracing costs a conversation: the turns of bench/_workload.py
untraced, traced into the OpenTelemetry SDK's in-memory exporter, and traced
with content capture, in the same invocation.

    pip install -e '.[test]' && python bench/tracing_overhead.py [--quick] [--turns 200] [--modes off,on,content]

One turn is one ``agent.run``: a prompt, 4 parallel calls of a no-op tool,
a text answer; traced, it makes 7 spans (``invoke_agent``, 2 ``chat``, 4
``execute_tool``), ended into a ``SimpleSpanProcessor``. Figure: CPU time
per turn, the mean over one conversation of ``--turns`` turns, as median
[min–max] of the runs, and its ratio to the first mode. With content
capture each ``chat`` span holds its whole request, so that figure grows
with the conversation. ``--modes off`` measures only the untraced turns and
also runs on a tree without tracing: the way to check that the hooks cost
nothing while tracing is off.
"""

from __future__ import annotations

import argparse
import statistics

from _measure import RUNS, header, repeat
from _workload import CALLS, conversation

MODES = ("off", "on", "content")


def _instrument(mode: str):
    """Instrument for ``mode``; the exporter, or None when off."""
    if mode == "off":
        return None
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import agentrio

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agentrio.instrument(provider, capture_content=mode == "content")
    return exporter


async def per_turn(mode: str, turns: int) -> dict[str, float]:
    exporter = _instrument(mode)
    try:
        times = await conversation(turns)
    finally:
        if exporter is not None:
            import agentrio

            agentrio.uninstrument()
    if exporter is not None:
        assert len(exporter.get_finished_spans()) == turns * (3 + CALLS)
    return {"per turn": statistics.fmean(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 turns")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES))
    args = parser.parse_args()
    turns = 20 if args.quick else args.turns
    modes = args.modes.split(",")
    if unknown := set(modes) - set(MODES):
        parser.error(f"unknown modes: {', '.join(sorted(unknown))}")
    header(
        f"Tracing: CPU per turn of a {turns:,}-turn conversation, {CALLS} parallel calls a turn", args.runs
    )
    figures = {mode: repeat(per_turn, mode, turns, runs=args.runs)["per turn"] for mode in modes}
    base = figures[modes[0]]
    for mode, spread in figures.items():
        print(f"  {mode:8} {spread.show():32} x{spread / base:.2f} of {modes[0]}")


if __name__ == "__main__":
    main()
