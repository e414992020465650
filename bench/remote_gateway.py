"""A prompt on the host that holds a session, and the same prompt on another
host (remote mode: posted through the database, followed in the journal).

    python bench/remote_gateway.py [--rounds 5]

Two ``agentrio serve --db DSN`` processes on a throwaway PostgreSQL server
of ``tests/pgcluster.py`` (fsync on), serving ``tests/fleet/chaos_spec``
with a model that answers at once (no tool, no delay), so that what is
measured is the gateway's and the database's part. A session is made on
host a; an ACP SDK client on a, and one on b, each prompt it in turn, one
prompt at a time. For each: time from sending ``session/prompt`` to the
first ``session/update`` the client gets, to the first piece of the answer
(``agent_message_chunk``), and to the response; median of ``--rounds``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acp import text_block

from tests.fleet.gateways import client_of, serving
from tests.gateway.acp_harness import RecordingClient
from tests.pgcluster import Cluster


class TimedClient(RecordingClient):
    """Records when each update came."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.times.append(time.perf_counter())
        await super().session_update(session_id, update, **kwargs)


async def timed_prompt(
    conn: Any, client: TimedClient, session_id: str, text: str
) -> tuple[float, float, float]:
    before = len(client.updates)
    start = time.perf_counter()
    response = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
    done = time.perf_counter()
    assert response.stop_reason == "end_turn", response
    new = list(zip(client.updates[before:], client.times[before:], strict=True))
    first = new[0][1] - start
    text_at = next(t for u, t in new if u.session_update == "agent_message_chunk") - start
    return first, text_at, done - start


async def settled(text: str, *clients: TimedClient) -> None:
    """Until every client has been shown the answer to ``text``: the next
    prompt is timed from a quiet start."""
    for client in clients:
        await client.wait_for(lambda c=client: f"answer to {text}" in c.text())
    await asyncio.sleep(0.3)  # the turn's last status updates too


async def measure(dsn: str, folder: Path, rounds: int) -> None:
    quick = {"FLEET_DELAY": "0", "FLEET_TOOL": "0"}
    async with (
        serving(dsn, folder, "a", **quick) as (_, port_a),
        serving(dsn, folder, "b", **quick) as (_, port_b),
        client_of(port_a, TimedClient()) as (on_a, seen_a),
        client_of(port_b, TimedClient()) as (on_b, seen_b),
    ):
        session_id = (await on_a.new_session(cwd=str(folder), mcp_servers=[])).session_id
        await on_b.load_session(session_id=session_id, cwd=str(folder), mcp_servers=[])
        await timed_prompt(on_a, seen_a, session_id, "s warm up a")
        await timed_prompt(on_b, seen_b, session_id, "s warm up b")
        results: dict[str, list[tuple[float, float, float]]] = {"holder (a)": [], "other host (b)": []}
        await settled("s warm up b", seen_a, seen_b)
        for n in range(rounds):
            results["holder (a)"].append(await timed_prompt(on_a, seen_a, session_id, f"s local {n}"))
            await settled(f"s local {n}", seen_a, seen_b)
            results["other host (b)"].append(await timed_prompt(on_b, seen_b, session_id, f"s remote {n}"))
            await settled(f"s remote {n}", seen_a, seen_b)
    for name, samples in results.items():
        first, text, response = (statistics.median(column) * 1000 for column in zip(*samples, strict=True))
        print(
            f"prompt on the {name}: first update {first:.1f} ms, first answer text {text:.1f} ms, "
            f"response {response:.1f} ms (median of {rounds})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cluster = Cluster.start(fsync=True)
    try:
        dsn = cluster.new_database()
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(measure(dsn, Path(folder), args.rounds))
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
