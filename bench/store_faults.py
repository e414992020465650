"""How the PostgreSQL store rides out faults, on a throwaway local server
(tests/pgcluster.py): median and range of 5 runs of each.

    python bench/store_faults.py [--lease 2 --lease 15] [--runs 5]

- failover: a holder process is killed (SIGKILL) while it holds a session;
  seconds until another store takes the session over (``acquire(wait=True)``).
- cut -> tool stopped: the holder's connections are stalled behind a
  loopback proxy while a tool's command runs; seconds until the command is
  gone (self-fencing), and until another store takes the session over.
- recovery: the server is stopped for 3 s under an idle agent; seconds from
  the server's return until the same store object is usable again.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentrio import AgentSpec, Runtime, ScriptedModel
from agentrio.journal import PostgresStore, StoreError
from agentrio.tools.builtin import bash
from tests.helpers import calls, say
from tests.journal.proxy import Proxy
from tests.pgcluster import Cluster
from tests.tools.processes import sleepers, unique_duration, wait_for_sleeper

HOLDER = """
import sys, trio
from agentrio import AgentSpec, Runtime, ScriptedModel
from agentrio.journal import PostgresStore, StoreError
async def main(dsn, lease):
    async with Runtime(PostgresStore(dsn, lease=float(lease))) as rt:
        await rt.create(AgentSpec("a", ScriptedModel([])), "s1")
        print("HOLDING", flush=True)
        await trio.sleep_forever()
trio.run(main, *sys.argv[1:])
"""


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s [{min(values):.2f}–{max(values):.2f}]"


def _start_holder(dsn: str, lease: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, dsn, str(lease)], stdout=subprocess.PIPE, env=env, text=True
    )
    assert holder.stdout.readline().strip() == "HOLDING"
    return holder


async def failover(cluster: Cluster, lease: float) -> float:
    dsn = cluster.new_database()
    holder = await trio.to_thread.run_sync(_start_holder, dsn, lease)
    await trio.sleep(lease / 2)  # somewhere between renewals
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    killed = time.monotonic()
    async with PostgresStore(dsn, lease=lease) as taker:
        await taker.acquire("s1", wait=True)
    return time.monotonic() - killed


async def partition(cluster: Cluster, lease: float, workspace: str) -> tuple[float, float]:
    dsn = cluster.new_database()
    database = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    marker = unique_duration()
    model = ScriptedModel([calls(("bash", {"command": f"sleep {marker}"})), say("never said")])
    spec = AgentSpec("a", model, tools=[bash(workspace, grace=0.2)])
    async with trio.open_nursery() as nursery:
        proxy = Proxy(cluster.socket)
        await nursery.start(proxy.serve)
        owner = PostgresStore(proxy.dsn(database), lease=lease)
        async with Runtime(owner) as rt:
            agent = await rt.create(spec, "s1")
            rt.nursery.start_soon(agent.run, "sleep")
            await wait_for_sleeper(marker)
            await trio.sleep(lease / 6)
            proxy.stall()
            cut = time.monotonic()
            async with PostgresStore(dsn, lease=lease) as taker:
                taken: list[float] = []

                async def take() -> None:
                    await taker.acquire("s1", wait=True)
                    taken.append(time.monotonic())

                async with trio.open_nursery() as watching:
                    watching.start_soon(take)
                    while sleepers(marker):
                        await trio.sleep(0.01)
                    stopped = time.monotonic()
            proxy.heal()
            await owner.until_usable()
        nursery.cancel_scope.cancel()
    return stopped - cut, taken[0] - cut


async def outage(cluster: Cluster) -> float:
    store = PostgresStore(cluster.new_database())
    async with Runtime(store) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([say("one"), say("two")])), "s1")
        await agent.run("one")
        await trio.to_thread.run_sync(cluster.kill_server)
        with contextlib.suppress(StoreError):
            await store.list_sessions()  # finds the server gone
        await trio.sleep(3.0)
        await trio.to_thread.run_sync(cluster.start_server)
        back = time.monotonic()
        await store.until_usable()
        recovery = time.monotonic() - back
        assert (await agent.run("two")).stop_reason == "completed"
    return recovery


async def main(leases: list[float], runs: int) -> None:
    cluster = Cluster.start(fsync=False)
    try:
        with tempfile.TemporaryDirectory() as workspace:
            for lease in leases:
                print(
                    f"lease {lease:g} s: failover {summary([await failover(cluster, lease) for _ in range(runs)])}"
                )
            for lease in leases:
                results = [await partition(cluster, lease, workspace) for _ in range(runs)]
                print(
                    f"lease {lease:g} s: cut -> tool stopped {summary([r[0] for r in results])}, "
                    f"cut -> taken over {summary([r[1] for r in results])}"
                )
        print(
            f"3 s outage: usable again {summary([await outage(cluster) for _ in range(runs)])} after the server's return"
        )
    finally:
        cluster.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lease", type=float, action="append")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    trio.run(main, args.lease or [2.0, 15.0], args.runs)
