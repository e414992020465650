"""``rt.serve``: runtimes claim the sessions that have work, no more than
they may run, never waiting for one another, and give idle ones up."""

from __future__ import annotations

import logging
from functools import partial

import psycopg
import trio

from agentrio import AgentSpec, AssistantMessage, Outcome, PostgresStore, Runtime, ScriptedModel, Text

LEASE = 2.0


def rows(dsn: str, statement: str, params=()) -> list[tuple]:
    with psycopg.connect(dsn, autocommit=True, options="-c search_path=agentrio") as conn:
        return conn.execute(statement, params).fetchall()


def holders(dsn: str) -> dict[str, str | None]:
    return dict(rows(dsn, "SELECT session_id, holder FROM leases ORDER BY session_id"))


def gated(gate: trio.Event, started: list[str] | None = None):
    """A reply that waits for ``gate``, then answers the last prompt."""

    async def reply(request):
        prompt = request.messages[-1].text
        if started is not None:
            started.append(prompt)
        await gate.wait()
        return AssistantMessage([Text(f"answer to {prompt}")])

    return reply


async def test_a_runtime_claims_no_more_than_max_sessions_and_another_takes_the_rest(dsn):
    gate, started = trio.Event(), []
    spec = AgentSpec("helper", ScriptedModel([gated(gate, started)] * 20))
    async with PostgresStore(dsn, lease=LEASE) as client:
        inputs = {f"s{n}": await client.submit(f"s{n}", f"s{n} hello", spec="helper") for n in range(6)}
        async with Runtime(PostgresStore(dsn, lease=LEASE, holder="first")) as first:
            await first.nursery.start(partial(first.serve, {"helper": spec}, max_sessions=4))
            with trio.fail_after(10):
                while len(started) < 4:
                    await trio.sleep(0.01)
            assert sorted(holders(dsn).values(), key=str) == [None, None, *["first"] * 4]
            async with Runtime(PostgresStore(dsn, lease=LEASE, holder="second")) as second:
                await second.nursery.start(partial(second.serve, {"helper": spec}, max_sessions=4))
                with trio.fail_after(10):
                    while len(started) < 6:
                        await trio.sleep(0.01)
                assert sorted(holders(dsn).values(), key=str) == [*["first"] * 4, *["second"] * 2]
                gate.set()
                for session_id, input_id in inputs.items():
                    outcome = await client.outcome(session_id, input_id, timeout=10)
                    assert outcome == Outcome("completed", f"answer to {session_id} hello")
                second.nursery.cancel_scope.cancel()
            first.nursery.cancel_scope.cancel()
    # A graceful stop gives every session up.
    assert set(holders(dsn).values()) == {None}


async def test_a_session_idle_past_idle_release_is_given_up_and_runs_anywhere_next(dsn):
    answer = AgentSpec(
        "helper", ScriptedModel([AssistantMessage([Text("one")]), AssistantMessage([Text("two")])])
    )
    async with PostgresStore(dsn, lease=LEASE) as client:
        async with Runtime(PostgresStore(dsn, lease=LEASE, holder="first")) as first:
            await first.nursery.start(partial(first.serve, {"helper": answer}, idle_release=0.3))
            input_id = await client.submit("s1", "hello", spec="helper")
            assert (await client.outcome("s1", input_id, timeout=10)).text == "one"
            assert holders(dsn) == {"s1": "first"}
            with trio.fail_after(5):
                while holders(dsn) != {"s1": None}:
                    await trio.sleep(0.05)
            first.nursery.cancel_scope.cancel()
        async with Runtime(PostgresStore(dsn, lease=LEASE, holder="second")) as second:
            await second.nursery.start(second.serve, {"helper": answer})
            input_id = await client.submit("s1", "again", spec="helper")
            assert (await client.outcome("s1", input_id, timeout=10)).text == "two"
            assert holders(dsn) == {"s1": "second"}
            second.nursery.cancel_scope.cancel()


async def test_input_for_a_spec_no_runtime_serves_stays_pending_and_is_reported(dsn, caplog):
    helper = AgentSpec("helper", ScriptedModel([]))
    other = AgentSpec("other", ScriptedModel([AssistantMessage([Text("at last")])]))
    caplog.set_level(logging.WARNING, logger="agentrio.supervisors.fleet")
    async with PostgresStore(dsn, lease=LEASE) as client:
        input_id = await client.submit("s1", "hello", spec="other")
        async with Runtime(PostgresStore(dsn, lease=LEASE)) as rt:
            await rt.nursery.start(rt.serve, {"helper": helper})
            with trio.fail_after(5):
                while not caplog.records:
                    await client.submit("s2", "nudge", spec="nobody")  # wakes the runtime
                    await trio.sleep(0.1)
            rt.nursery.cancel_scope.cancel()
        reported = {r.getMessage().split("'")[1] for r in caplog.records}
        assert "s1" in reported and "does not serve" in caplog.records[0].getMessage()
        assert rows(dsn, "SELECT count(*) FROM inputs WHERE session_id = 's1'") == [(1,)]
        async with Runtime(PostgresStore(dsn, lease=LEASE)) as rt:
            await rt.nursery.start(rt.serve, [other])
            assert await client.outcome("s1", input_id, timeout=10) == Outcome("completed", "at last")
            rt.nursery.cancel_scope.cancel()
