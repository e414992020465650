"""The cost of the checks messages run when they are made.

    python bench/message_checks.py [--steps 20000] [--runs 7]

Builds what one agent step makes (an assistant message with text and four
tool calls, four tool results, the stream events of the reply) ``--steps``
times, with attrs validators on and then off (``attrs.validators.disabled``),
alternating, in one process. CPU time per step: median and spread (min-max)
of ``--runs`` runs of each, and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrio.messages import AssistantMessage, Text, ToolCall, ToolResultMessage, Usage
from agentrio.models import Done, TextDelta, TextStart, ToolCallDelta, ToolCallStart

ARGS = {"path": "src/agentrio/messages/checks.py", "offset": 10, "limit": 200}


def step(i: int) -> None:
    calls = [ToolCall(f"call_{i}_{n}", "read", dict(ARGS)) for n in range(4)]
    AssistantMessage([Text("Reading the files."), *calls], usage=Usage(1200, 80))
    for call in calls:
        ToolResultMessage(call.id, call.name, [Text("file contents " * 20)])
    TextStart(0)
    for _ in range(8):
        TextDelta(0, "chunk ")
    for n in range(4):
        ToolCallStart(n + 1, calls[n].id, "read")
        ToolCallDelta(n + 1, '{"path": "src/agentrio/messages/checks.py"}')
    Done("tool_use", Usage(1200, 80))


def run(steps: int) -> float:
    start = time.process_time()
    for i in range(steps):
        step(i)
    return (time.process_time() - start) / steps * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.runs):
        for checked in (True, False):
            with attrs.validators.disabled() if not checked else contextlib.nullcontext():
                times[checked].append(run(args.steps))
    for checked, label in ((True, "checked"), (False, "unchecked")):
        t = times[checked]
        print(
            f"{label:9}: median {statistics.median(t):6.1f} us CPU per step, spread {min(t):.1f}-{max(t):.1f} ({args.runs} runs of {args.steps:,} steps)"
        )
    print(f"checked / unchecked: {statistics.median(times[True]) / statistics.median(times[False]):.2f}x")


if __name__ == "__main__":
    main()
