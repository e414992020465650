"""SSE decoding of one long line against the same bytes as ordinary events.

    python bench/sse_long_line.py [--mib 50] [--chunk 4096] [--runs 5]

One line of ``--mib`` MiB fed in ``--chunk``-byte reads, against the same
number of bytes as short ``data:`` events, each run in a fresh decoder. CPU
time per run; median and spread (min-max) of ``--runs`` runs, and the ratio
of the medians: decoding is linear when it stays near 1.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrio.models.sse import SSEDecoder


def decode(body: bytes, chunk: int) -> int:
    decoder = SSEDecoder(max_event_bytes=len(body) + 1)
    events = 0
    for i in range(0, len(body), chunk):
        events += len(decoder.feed(body[i : i + chunk]))
    return events + len(decoder.close())


def cpu(body: bytes, chunk: int, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.process_time()
        decode(body, chunk)
        times.append(time.process_time() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=50)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    size = args.mib * 2**20
    long_line = b"data: " + b"x" * size + b"\n\n"
    event = b"data: " + b"x" * 120 + b"\n\n"
    events = event * (len(long_line) // len(event))
    results = {}
    for name, body in [("one long line", long_line), ("short events", events)]:
        times = cpu(body, args.chunk, args.runs)
        results[name] = statistics.median(times)
        print(
            f"{name:14}: median {results[name]:.3f} s CPU, spread {min(times):.3f}-{max(times):.3f} s ({args.runs} runs, {args.mib} MiB in {args.chunk}-byte reads)"
        )
    print(f"long line / short events: {results['one long line'] / results['short events']:.2f}x")


if __name__ == "__main__":
    main()
