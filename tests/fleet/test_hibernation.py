"""Sessions a store leases are never hibernated: their agent's scope keeps
the lease and takes the input posted from anywhere."""

from __future__ import annotations

from functools import partial

import trio

from agentrio import AgentSpec, AssistantMessage, PostgresStore, Runtime, ScriptedModel, Text

from .test_serve import LEASE, holders


async def test_an_agent_whose_session_is_leased_never_hibernates(dsn):
    spec = AgentSpec("helper", ScriptedModel([AssistantMessage([Text("one")])]))
    async with PostgresStore(dsn, lease=LEASE) as client:
        store = PostgresStore(dsn, lease=LEASE, holder="first")
        async with Runtime(store, hibernate_after=0) as rt:
            await rt.nursery.start(partial(rt.serve, {"helper": spec}, idle_release=60))
            input_id = await client.submit("s1", "hello", spec="helper")
            assert (await client.outcome("s1", input_id, timeout=10)).text == "one"
            created = await rt.create(AgentSpec("other", ScriptedModel([])), "s2")
            served = rt.registry.get("s1")
            await trio.sleep(LEASE * 1.5)  # idle far past hibernate_after, and past a lease
            assert served is not None and not served.hibernating and not created.hibernating
            assert holders(dsn) == {"s1": "first", "s2": "first"}  # both leases kept
            rt.nursery.cancel_scope.cancel()
