"""Following a typed answer as it streams: the partial value after every delta.

    python bench/partial_output.py

The answer is a 200-item JSON list (about 12.6 kB) streamed in 10-character
deltas; after each delta the reader gives the value written so far, as a UI
showing ``output_update`` events would ask for it.

* ``PartialJSON``: agentrio's reader, fed delta by delta.
* ``parse_partial_json``: the stateless function on the whole text so far at
  every delta (what a caller without the reader would do).
* peer: ``pydantic_core.from_json(text, allow_partial=True)`` on the whole
  text so far at every delta (pydantic-ai's way; Rust).

Each figure is the CPU time (``time.process_time``) of following the whole
answer, median and spread (min-max) of the runs, and its ratio to the peer.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrio.models.partial_json import PartialJSON, parse_partial_json

DOC = json.dumps(
    {"result": [{"name": f"city {i}", "population": i * 1000, "tags": ["a", "b"]} for i in range(200)]}
)
DELTAS = [DOC[i : i + 10] for i in range(0, len(DOC), 10)]


def incremental() -> object:
    reader = PartialJSON()
    value = None
    for delta in DELTAS:
        reader.feed(delta)
        value = reader.value()
    return value


def whole_text(parse: Callable[[str], object]) -> Callable[[], object]:
    def follow() -> object:
        text, value = "", None
        for delta in DELTAS:
            text += delta
            value = parse(text)
        return value

    return follow


def cpu_seconds(fn: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.process_time()
        assert fn() == json.loads(DOC)
        times.append(time.process_time() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    import pydantic_core

    contenders = {
        "PartialJSON (incremental)": incremental,
        "parse_partial_json (whole text)": whole_text(parse_partial_json),
        "peer: pydantic_core.from_json(allow_partial=True)": whole_text(
            lambda text: pydantic_core.from_json(text, allow_partial=True)
        ),
    }
    results = {name: cpu_seconds(fn, args.runs) for name, fn in contenders.items()}
    peer = statistics.median(results["peer: pydantic_core.from_json(allow_partial=True)"])
    print(f"{len(DOC):,} characters in {len(DELTAS):,} deltas, {args.runs} runs, CPU ms")
    for name, times in results.items():
        median = statistics.median(times)
        print(
            f"{name:52} median {median * 1e3:8.1f}  spread {min(times) * 1e3:.1f}-{max(times) * 1e3:.1f}"
            f"  x{median / peer:.2f} of the peer"
        )


if __name__ == "__main__":
    main()
