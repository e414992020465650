"""What images cost a journal: its size, and the time to restore a session.

    python bench/image_sessions.py [--size 200000] [--sends 3] [--rounds 5]

A session on an ``SQLiteStore`` whose user sends the same image (``--size``
random bytes after a PNG signature) ``--sends`` times, one run each,
answered by a ``ScriptedModel``. Printed: the bytes the records and blobs
hold and the growth of the database file (after the store's close, which
checkpoints the WAL) against the image's size, then the time
``Runtime.create`` takes to restore the session, and to restore the same
session without images, each the median of ``--rounds`` (with the spread
as min-max).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrio import (
    AgentSpec,
    AssistantMessage,
    Image,
    Runtime,
    ScriptedModel,
    SQLiteStore,
    Text,
    UserMessage,
)


def _spec(replies: int) -> AgentSpec:
    return AgentSpec("bench", ScriptedModel([AssistantMessage([Text("Seen.")])] * replies))


async def _write(path: Path, image: Image | None, sends: int) -> None:
    async with Runtime(SQLiteStore(path)) as rt:
        agent = await rt.create(_spec(sends), session_id="s")
        for i in range(sends):
            parts = [Text(f"Look at this, {i}.")] + ([image] if image is not None else [])
            await agent.run(UserMessage(parts))


async def _restore(path: Path) -> float:
    async with Runtime(SQLiteStore(path)) as rt:
        start = time.perf_counter()
        await rt.create(_spec(0), session_id="s")
        return time.perf_counter() - start


def _stored(path: Path) -> tuple[int, int]:
    with sqlite3.connect(path) as conn:
        records = conn.execute("SELECT COALESCE(SUM(length(data)), 0) FROM records").fetchone()[0]
        blobs = conn.execute("SELECT COALESCE(SUM(length(data)), 0) FROM blobs").fetchone()[0]
    conn.close()
    return records, blobs


def _median(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f} ms ({min(values) * 1000:.2f}-{max(values) * 1000:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--sends", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    image = Image(b"\x89PNG\r\n\x1a\n" + os.urandom(args.size - 8), "image/png")
    with tempfile.TemporaryDirectory() as folder:
        with_images, without = Path(folder, "images.db"), Path(folder, "text.db")
        trio.run(_write, without, None, args.sends)
        trio.run(_write, with_images, image, args.sends)
        records, blobs = _stored(with_images)
        plain_records, _ = _stored(without)
        growth = os.path.getsize(with_images) - os.path.getsize(without)
        print(f"image of {args.size:,} bytes sent {args.sends} times")
        print(f"  records {records:,} bytes (without images {plain_records:,}), blobs {blobs:,} bytes")
        print(
            f"  database file grew {growth:,} bytes over the same session without images: {growth / args.size:.2f}x the image"
        )
        times = [trio.run(_restore, with_images) for _ in range(args.rounds)]
        plain = [trio.run(_restore, without) for _ in range(args.rounds)]
        print(f"  restore with images {_median(times)}; without {_median(plain)} (median of {args.rounds})")


if __name__ == "__main__":
    main()
