"""A failed store is handled once: the run ends ``error`` naming the store,
queued input stays queued and nothing is retried in a loop (CPU and log
volume held over the 3 s after the failure), and once the store recovers
by itself the agent takes its queued input."""

from __future__ import annotations

import logging
import time

import pytest
import trio

from agentrio import AgentSpec, Runtime, ScriptedModel, StoreError, tool

from ..helpers import calls, say
from .faults import FailingCommits

#: Over the 3 s from a failure: the most CPU (seconds, every thread of the
#: process) and log bytes allowed (the failure is logged once, with its
#: traceback). A loop retrying runs used ~2 s and MBs.
QUIET_CPU = 0.3
QUIET_LOG = 5_000


class _Bytes(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.bytes = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.bytes += len(self.format(record)) + 1


@pytest.fixture
def log_bytes():
    handler, root = _Bytes(), logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(level)


async def test_a_failed_store_stops_the_run_once_keeps_the_input_and_resumes_after_it_recovers(
    new_store, monkeypatch, log_bytes
):
    fault = FailingCommits(new_store, monkeypatch)
    started = trio.Event()

    @tool
    async def wait_forever() -> str:
        """Wait."""
        started.set()
        await trio.sleep_forever()

    model = ScriptedModel([calls(("wait_forever", {})), say("one"), say("two"), say("three")])
    # A lease outlasting the outage: one that would not is given up (see
    # test_fencing), and its session is no longer this store's to write.
    options = {"lease": 30.0} if new_store.kind == "postgres" else {}
    async with Runtime(new_store(**options)) as rt:
        agent = await rt.create(AgentSpec("a", model, tools=[wait_forever]), "s1")
        events = []

        async def watch(task_status=trio.TASK_STATUS_IGNORED) -> None:
            async with agent.subscribe() as stream:
                task_status.started()
                async for event in stream:
                    events.append(event)

        await rt.nursery.start(watch)
        first = []
        rt.nursery.start_soon(lambda: _append(first, agent.run("go")))
        with trio.fail_after(10):
            await started.wait()
        # Follow-ups queued (and durable) before the failure.
        followups = [await agent.followup(text) for text in ("f1", "f2")]
        fault.on()
        cpu, logged = time.process_time(), log_bytes.bytes
        with pytest.raises(StoreError):
            await agent.steer("a line the store cannot take")
        failed_at = trio.current_time()
        with trio.fail_after(10):
            while not first:
                await trio.sleep(0.01)
        (result,) = first
        assert result.stop_reason == "error"
        assert repr(rt.store) in result.error, result.error

        # Over the 3 s from the failure: nothing is retried in a loop.
        await trio.sleep_until(failed_at + 3.0)
        cpu, logged = time.process_time() - cpu, log_bytes.bytes - logged
        print(f"{new_store.kind}: in the 3 s after the failure: {cpu:.3f} s CPU, {logged} log bytes")
        assert cpu < QUIET_CPU and logged < QUIET_LOG
        ends = [e for e in events if e.type == "agent_end"]
        assert len(ends) == 1 and trio.current_time() - failed_at >= 3.0
        assert [e.type for e in events if e.type.startswith("store_")] == ["store_failed"]
        assert rt.store.failed.is_set() and not rt.store.recovered.is_set()

        # The store recovers by itself; the agent takes its queued input.
        fault.off()
        with trio.fail_after(10):
            await rt.store.recovered.wait()
            await agent.wait_idle()
            while len([e for e in events if e.type == "agent_end"]) < 2:
                await trio.sleep(0.01)
            await agent.wait_idle()
        assert [e.type for e in events if e.type.startswith("store_")] == ["store_failed", "store_recovered"]
        ends = [e for e in events if e.type == "agent_end"]
        assert [e.stop_reason for e in ends] == ["error", "completed"], ends[-1].error
        texts = [m.text for m in agent.messages if m.role == "assistant"]
        assert texts[-2:] == ["one", "two"], texts
        assert not rt.store.failed.is_set()
    records = new_store.stored_records("s1")
    stored = {r.items[0].id for r in records if r.type == "inbox_spliced" and r.items}
    assert {f.id for f in followups} <= stored
    answers = [
        r.message.text for r in records if r.type == "message_appended" and r.message.role == "assistant"
    ]
    assert answers[-2:] == ["one", "two"]  # written once the store was back


async def _append(results: list, awaitable) -> None:
    results.append(await awaitable)
