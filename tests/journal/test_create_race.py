"""Runtimes racing to create a new session id: one creates it; the others
get ``SessionHeld`` naming the holder, or with ``wait=True`` wait for it and
then open it. Never ``SessionExists``."""

from __future__ import annotations

from contextlib import AsyncExitStack

import trio

from agentrio import AgentSpec, Runtime, ScriptedModel
from agentrio.journal import SessionHeld

RACERS = 4


async def test_racing_creators_one_creates_the_others_are_told_who_holds_it(new_store):
    spec = AgentSpec("a", ScriptedModel([]))
    created, refused, other = [], [], []
    async with AsyncExitStack() as stack:
        runtimes = [await stack.enter_async_context(Runtime(new_store())) for _ in range(RACERS)]

        async def create(rt: Runtime) -> None:
            try:
                created.append(await rt.create(spec, "new"))
            except SessionHeld as exc:
                refused.append(exc)
            except Exception as exc:  # noqa: BLE001 - any other failure is recorded, then asserted absent
                other.append(exc)

        async with trio.open_nursery() as nursery:
            for rt in runtimes:
                nursery.start_soon(create, rt)
        assert other == [] and len(created) == 1 and len(refused) == RACERS - 1, (other, refused)
        holder = getattr(created[0].runtime.store, "holder", None)
        for exc in refused:
            assert "'new'" in str(exc) and (holder is None or holder in str(exc)), exc
        assert [info.session_id for info in await runtimes[0].store.list_sessions()] == ["new"]


async def test_racing_creators_that_wait_each_open_it_in_turn(new_store):
    spec = AgentSpec("a", ScriptedModel([]))
    opened, other = [], []
    async with AsyncExitStack() as stack:
        runtimes = [await stack.enter_async_context(Runtime(new_store())) for _ in range(RACERS)]

        async def create(rt: Runtime) -> None:
            try:
                agent = await rt.create(spec, "new", wait=True)
            except Exception as exc:  # noqa: BLE001 - any failure is recorded, then asserted absent
                other.append(exc)
                return
            opened.append(agent)
            await trio.sleep(0.05)
            await agent.dispose()  # the next one waiting takes it

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                for rt in runtimes:
                    nursery.start_soon(create, rt)
        assert other == [] and len(opened) == RACERS
        assert [info.session_id for info in await runtimes[0].store.list_sessions()] == ["new"]
