"""Self-fencing: an owner cut off from the database (its connections
stalled behind a proxy the test controls) stops its session's work, a
tool's process included, before its lease can run out and another store
take the session over."""

from __future__ import annotations

import time

import psycopg
import trio

from agentrio import AgentSpec, Runtime, ScriptedModel
from agentrio.journal import PostgresStore
from agentrio.tools.builtin import bash

from ..helpers import calls, say
from ..tools.processes import sleepers, unique_duration, wait_for_sleeper
from .proxy import Proxy

LEASE = 2.0


async def test_a_partitioned_owner_stops_its_tool_before_another_store_takes_the_session(postgres, tmp_path):
    dsn = postgres.new_database()
    database = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    marker = unique_duration()
    model = ScriptedModel([calls(("bash", {"command": f"sleep {marker}"})), say("never said")])
    spec = AgentSpec("a", model, tools=[bash(str(tmp_path), grace=0.2)])
    async with trio.open_nursery() as nursery:
        proxy = Proxy(postgres.socket)
        await nursery.start(proxy.serve)
        owner = PostgresStore(proxy.dsn(database), lease=LEASE)
        async with Runtime(owner) as rt:
            agent = await rt.create(spec, "s1")
            results = []

            async def run() -> None:
                results.append(await agent.run("sleep a while"))

            rt.nursery.start_soon(run)
            with trio.fail_after(10):
                await wait_for_sleeper(marker)
            await trio.sleep(0.3)  # somewhere between two renewals
            proxy.stall()
            cut = time.monotonic()
            stopped = taken = None
            async with PostgresStore(dsn, lease=LEASE) as taker, trio.open_nursery() as watching:

                async def take() -> None:
                    nonlocal taken
                    await taker.acquire("s1", wait=True)
                    taken = time.monotonic()

                watching.start_soon(take)
                with trio.fail_after(10):
                    while sleepers(marker):
                        await trio.sleep(0.01)
                stopped = time.monotonic()
            print(
                f"lease {LEASE} s: cut -> tool stopped {stopped - cut:.2f} s, -> taken over {taken - cut:.2f} s"
            )
            assert stopped < taken
            with trio.fail_after(10):
                while not results:
                    await trio.sleep(0.01)
            (result,) = results
            assert result.stop_reason == "error" and "LeaseLost" in result.error, result.error
            proxy.heal()
            with trio.fail_after(10):
                await owner.until_usable()
            # The session opens again here once the other store let it go.
            await agent.dispose()
            again = await rt.create(AgentSpec("a", ScriptedModel([say("back")])), "s1", wait=True)
            assert (await again.run("and now")).stop_reason == "completed"
        nursery.cancel_scope.cancel()


def test_every_connection_bounds_its_waits_by_the_lease(postgres):
    from agentrio.journal.postgres.database import Database

    db = Database(postgres.new_database(), schema="agentrio", holder="t", lease_seconds=6.0, create=True)
    try:
        conn = db._conn
        settings = {
            name: conn.execute(f"SHOW {name}").fetchone()[0]
            for name in ("statement_timeout", "idle_in_transaction_session_timeout")
        }
        assert settings == {"statement_timeout": "6s", "idle_in_transaction_session_timeout": "6s"}
        options = {o.keyword.decode(): o.val for o in conn.pgconn.info if o.val is not None}
        assert (options["keepalives"], options["keepalives_idle"], options["connect_timeout"]) == (
            b"1",
            b"2",
            b"2",
        )
        assert options["tcp_user_timeout"] == b"6000"
    finally:
        db.close()
