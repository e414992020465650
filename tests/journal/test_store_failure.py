"""A durable store whose commit is refused stops its agents' work at once,
whatever the store: the tool running is cancelled, and the run ends
``error`` naming the failure (``test_refused_commit`` does the same to a
real command in a process of its own)."""

from __future__ import annotations

import trio

from agentrio import AgentSpec, Runtime, ScriptedModel, StoreError, tool

from ..helpers import calls, say


async def test_a_refused_commit_cancels_the_running_tool_and_ends_the_run_in_error(new_store):
    started, cancelled = trio.Event(), trio.Event()

    @tool
    async def wait_forever() -> str:
        """Wait."""
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    model = ScriptedModel([calls(("wait_forever", {})), say("never said")])
    async with Runtime(new_store()) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[wait_forever]), "s1")
        assert not rt.store.failed.is_set()
        results, ended = [], trio.Event()

        async def run() -> None:
            results.append(await agent.run("go"))
            ended.set()

        rt.nursery.start_soon(run)
        with trio.fail_after(10):
            await started.wait()
        # Another writer takes the session's next records behind the store's
        # back: the store's next commit is refused.
        (last,) = new_store.execute("SELECT MAX(seq) FROM records WHERE session_id = ?", ("s1",))[0]
        for seq in range(last + 1, last + 51):
            new_store.execute("INSERT INTO records VALUES (?, ?, 'message', 0, '{}', 0)", ("s1", seq))
        try:
            await agent.steer("a line typed while the tool waits")
        except StoreError:
            pass  # refused at once, or buffered and refused by the commit
        with trio.fail_after(10):
            await cancelled.wait()
            await ended.wait()
        assert rt.store.failed.is_set()
        (result,) = results
        assert result.stop_reason == "error"
        expected = f"StoreError: {rt.store!r} failed: nothing more is written until it recovers"
        assert result.error.startswith(expected), result.error
