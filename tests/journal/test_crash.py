"""Crash repair with real processes: a child runs an agent on a store and is
killed with SIGKILL at a known point; the session is then restored from the
store, checked, and run again against a strict model. On PostgreSQL the dead
child still holds the session's lease: it is taken over once the lease ends."""

from __future__ import annotations

import signal

import pytest

from agentrio import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, AgentSpec, Runtime, ScriptedModel
from agentrio.journal import SessionHeld
from agentrio.journal.records import TurnEnded

from ..helpers import say
from .crash_child import SESSION
from .processes import read_line, start


async def kill_at_ready(place, scenario, tmp_path):
    stderr = tmp_path / f"{scenario}.stderr"
    process = await start("tests.journal.crash_child", place.kind, place.location, scenario, stderr=stderr)
    try:
        assert await read_line(process, stderr) == "READY"
    finally:
        process.kill()
        await process.wait()
    assert process.returncode == -signal.SIGKILL


async def take_over(store):
    """On a store with leases: opening the session is refused while the
    dead child's lease runs; waiting for it takes the session over."""
    if hasattr(store, "acquire"):
        with pytest.raises(SessionHeld, match=f"session '{SESSION}' is held by "):
            await store.load_state(SESSION)
        await store.acquire(SESSION, wait=True)


async def restore_and_continue(place, replies=1):
    """Restore the killed session, check that the next requests are ones a
    provider accepts, and return the restored history and inbox, and the
    journal after the run."""
    model = ScriptedModel([say("recovered")] * replies, strict=True)
    async with place() as store, Runtime(store) as rt:
        await take_over(store)
        agent = await rt.create(AgentSpec("a", model), session_id=SESSION)
        restored = list(agent.messages)
        inbox = (
            [q.message.text for q in agent.inbox.next_step],
            [q.message.text for q in agent.inbox.next_turn],
        )
        result = await agent.run("after the crash")
        assert result.stop_reason == "completed", result.error
        _, records = await rt.store.load_session(SESSION)
    return restored, inbox, records


def texts(messages):
    return [(m.role, m.text) for m in messages]


def turn_ends(records):
    return [(r.turn, r.stop_reason) for r in records if isinstance(r, TurnEnded)]


async def test_killed_during_a_model_stream(new_store, tmp_path):
    await kill_at_ready(new_store, "model_stream", tmp_path)
    restored, inbox, records = await restore_and_continue(new_store, replies=2)
    # The streamed text was never committed; the step keeps its prompt.
    assert texts(restored) == [("user", "first")]
    assert inbox == ([], ["queued while streaming"])
    # The interrupted turn was closed; the queued follow-up got its own turn.
    assert turn_ends(records) == [(1, "aborted"), (2, "completed"), (3, "completed")]


async def test_killed_during_a_parallel_tool(new_store, tmp_path):
    await kill_at_ready(new_store, "parallel_tool", tmp_path)
    restored, inbox, records = await restore_and_continue(new_store)
    _, assistant, *results = restored
    assert [c.name for c in assistant.tool_calls] == ["blocker", "quick", "later"]
    # Both parallel calls had started; ``quick`` finished and its result was
    # durable at once, though not yet committed: it is recovered as it was.
    assert [(r.tool_name, r.is_error, r.text.split(":")[0]) for r in results] == [
        ("blocker", True, TOOL_OUTCOME_UNKNOWN),
        ("quick", False, "finished"),
        ("later", True, TOOL_NOT_STARTED),
    ]
    assert "Side effects may have happened" in results[0].text
    assert inbox == ([], [])
    assert turn_ends(records) == [(1, "aborted"), (2, "completed")]


async def test_killed_during_an_exclusive_tool(new_store, tmp_path):
    await kill_at_ready(new_store, "exclusive_tool", tmp_path)
    restored, _, records = await restore_and_continue(new_store)
    results = restored[2:]
    # The earlier result was made durable before the exclusive call started.
    assert [(r.tool_name, r.is_error, r.text.split(":")[0]) for r in results] == [
        ("echo", False, "echo"),
        ("exclusive", True, TOOL_OUTCOME_UNKNOWN),
        ("echo", True, TOOL_NOT_STARTED),
    ]
    assert results[0].text == "echo: before"
    assert turn_ends(records) == [(1, "aborted"), (2, "completed")]


async def test_killed_between_turns(new_store, tmp_path):
    await kill_at_ready(new_store, "between_turns", tmp_path)
    restored, inbox, records = await restore_and_continue(new_store)
    assert texts(restored) == [("user", "first"), ("assistant", "one")]
    assert inbox == (["context for the next turn"], [])
    # Nothing was open, so nothing was repaired.
    assert turn_ends(records) == [(1, "completed"), (2, "completed")]


async def test_killed_with_input_queued_resumes_it_in_a_runtime_that_resumes(new_store, tmp_path):
    await kill_at_ready(new_store, "model_stream", tmp_path)
    model = ScriptedModel([say("answer to the queued follow-up")], strict=True)
    async with new_store() as store, Runtime(store, resume=True) as rt:
        await take_over(store)
        agent = await rt.create(AgentSpec("a", model), session_id=SESSION)
        await agent.wait_idle()  # nobody asked: the runtime resumed the queued input
        assert texts(agent.messages) == [
            ("user", "first"),
            ("user", "queued while streaming"),
            ("assistant", "answer to the queued follow-up"),
        ]
        assert not agent.inbox.next_turn and model.remaining == 0
        _, records = await store.load_session(SESSION)
    assert turn_ends(records) == [(1, "aborted"), (2, "completed")]
