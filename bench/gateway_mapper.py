"""What the gateway's update mapper costs while an answer streams.

    python bench/gateway_mapper.py [--runs 5] [--megabytes 20] [--delta 16]

Feeds one session's ``UpdateMapper`` the events of one streamed answer of
``--megabytes`` of text in deltas of ``--delta`` characters (message_start,
the message_updates, message_end), as the session's pump does, and times
the CPU of the whole (``time.process_time``). The figure to compare with:
the same loop over the same events without the mapper. Printed: the median
and the spread (min-max) over the runs, for each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrio import events as ev
from agentrio.gateway.acp.updates import UpdateMapper
from agentrio.messages import AssistantMessage, Text
from agentrio.models.events import TextDelta


def answer_events(megabytes: int, delta: int) -> list[ev.Event]:
    ids = {"agent_id": "a", "session_id": "s", "time": 0.0}
    text = ("lorem ipsum dolor sit amet, " * (megabytes * 1_000_000 // 28 + 1))[: megabytes * 1_000_000]
    events: list[ev.Event] = [ev.MessageStart(seq=0, role="assistant", **ids)]
    events += [
        ev.MessageUpdate(seq=i + 1, delta=TextDelta(0, text[i : i + delta]), **ids)
        for i in range(0, len(text), delta)
    ]
    events.append(ev.MessageEnd(seq=len(events), message=AssistantMessage([Text(text)]), **ids))
    return events


def without_mapper(events: list[ev.Event]) -> float:
    started = time.process_time()
    for event in events:
        isinstance(event, ev.ChildEvent)
    return time.process_time() - started


def with_mapper(events: list[ev.Event]) -> float:
    mapper = UpdateMapper(Path("."))
    started = time.process_time()
    for event in events:
        mapper.updates(event)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--megabytes", type=int, default=20)
    parser.add_argument("--delta", type=int, default=16, help="characters per streamed delta")
    args = parser.parse_args()
    events = answer_events(args.megabytes, args.delta)
    print(
        f"{args.megabytes} MB answer, {len(events) - 2:,} deltas of {args.delta} characters, {args.runs} runs"
    )
    for name, measure in (("no mapper", without_mapper), ("UpdateMapper", with_mapper)):
        times = [measure(events) for _ in range(args.runs)]
        print(
            f"{name:>13}: median {statistics.median(times):.3f} s CPU (min {min(times):.3f}, max {max(times):.3f})"
        )


if __name__ == "__main__":
    main()
