"""Snapshots: a restore from the latest snapshot and the records after it
gives the state a replay of the whole journal gives."""

from __future__ import annotations

import gc
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrio import (
    AgentSpec,
    AssistantMessage,
    Runtime,
    ScriptedModel,
    Text,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentrio.journal import SessionInfo, SessionState
from agentrio.journal import journal as journal_module
from agentrio.journal import rows as rows_module
from agentrio.journal.records import (
    MessageAppended,
    StepEnded,
    StepStarted,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)

from ..helpers import calls, echo_tool, say
from .strategies import journals

_sessions = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=journals(), cuts=st.lists(st.integers(0, 200), max_size=4))
async def test_restoring_from_snapshots_equals_a_full_replay(new_store, records, cuts):
    """Snapshots are taken at arbitrary records (mid-step included), in
    batches of any size; the store is reopened before the restore."""
    session_id = f"s{next(_sessions)}"
    cuts = sorted({min(c, len(records)) for c in cuts})
    async with new_store() as store:
        await store.create_session(SessionInfo(session_id))
        start = 0
        for cut in cuts:
            await store.append(session_id, records[start:cut])
            await store.save_snapshot(session_id, SessionState.replay(records[:cut]))
            start = cut
        await store.append(session_id, records[start:])
    async with new_store() as store:
        loaded = await store.load_state(session_id)
        assert (await store.load_session(session_id))[1] == records
    assert loaded.state == SessionState.replay(records)
    assert loaded.unsnapshotted == len(records) - (cuts[-1] if cuts else 0)


async def test_the_journal_offers_snapshots_and_a_restore_replays_only_the_rest(new_store, monkeypatch):
    monkeypatch.setattr(journal_module, "SNAPSHOT_EVERY", 7)
    replies = [r for i in range(6) for r in (calls(("echo", {"text": str(i)})), say(f"done {i}"))]
    spec = AgentSpec("a", ScriptedModel(replies), tools=[echo_tool()])
    async with Runtime(new_store()) as rt:
        agent = await rt.create(spec, "s1")
        for i in range(6):
            await agent.run(f"turn {i}")
        history = list(agent.messages)
    async with new_store() as store:
        loaded = await store.load_state("s1")
        _, records = await store.load_session("s1")
    assert len(records) > 7 * 5
    assert loaded.unsnapshotted < 7
    assert loaded.state == SessionState.replay(records)
    assert loaded.state.messages == history


@pytest.mark.parametrize("collector", ["on", "off"])
async def test_a_restore_decodes_with_the_collector_waiting_and_leaves_it_as_it_was(
    new_store, monkeypatch, collector
):
    """Decoding frees nothing, so collections during it would find nothing:
    every store decodes a whole session with the collector off, and turns it
    back on only if it was on."""
    records = [
        record
        for turn in (1, 2)
        for record in (
            TurnStarted(turn),
            StepStarted(turn),
            MessageAppended(UserMessage(f"question {turn}")),
            MessageAppended(AssistantMessage([ToolCall(f"c{turn}", "echo", {"text": "x"})])),
            ToolCallStarted(f"c{turn}"),
            MessageAppended(ToolResultMessage(f"c{turn}", "echo", [Text("x")])),
            StepEnded(turn),
            TurnEnded(turn, "completed"),
        )
    ]
    session_id = f"s{next(_sessions)}"
    async with new_store() as store:
        await store.create_session(SessionInfo(session_id), records[:8])
        await store.save_snapshot(session_id, SessionState.replay(records[:8]))
        await store.append(session_id, records[8:])
    seen = []
    for name in ("decode_record", "decode_message_record"):
        decode = getattr(rows_module, name)
        monkeypatch.setattr(
            rows_module, name, lambda text, decode=decode: seen.append(gc.isenabled()) or decode(text)
        )
    if collector == "off":
        gc.disable()
    try:
        async with new_store() as store:
            loaded = await store.load_state(session_id)
            _, read = await store.load_session(session_id)
        assert gc.isenabled() is (collector == "on")
    finally:
        gc.enable()
    assert loaded.state == SessionState.replay(records) and read == records
    assert seen and not any(seen)
