"""The Store interface on each durable store: an SQLite file and a
PostgreSQL database."""

from __future__ import annotations

import threading

import pytest
import trio

from agentrio import AgentSpec, Runtime, ScriptedModel, StoreError
from agentrio.journal import SessionExists, SessionInfo, SessionNotFound, SessionState, StoreCorrupt
from agentrio.journal.records import MessageAppended, TurnStarted
from agentrio.messages import ToolResultMessage

from ..helpers import say
from .records import tool_turn, tool_turns


async def test_records_and_info_survive_closing(new_store):
    records = tool_turns(3)
    info = SessionInfo(
        "s1", created_at=1000.5, parent_session_id="s0", seed_length=4, agent_name="a", spawned_by="s9"
    )
    async with new_store() as store:
        await store.create_session(info, records[:2])
        await store.append("s1", records[2:7])
        await store.append("s1", records[7:])
    async with new_store() as store:
        assert await store.load_session("s1") == (info, records)
        loaded = await store.load_state("s1")
    assert loaded.info == info
    assert loaded.state == SessionState.replay(records)
    assert loaded.unsnapshotted == len(records)


async def test_sync_makes_appends_visible_to_another_connection(store, new_store):
    await store.create_session(SessionInfo("s1"))
    await store.append("s1", tool_turn(1, 1))
    await store.sync("s1")
    async with new_store() as other:
        _, records = await other.load_session("s1")
    assert records == tool_turn(1, 1)


async def test_only_a_missing_session_is_not_found(store):
    with pytest.raises(SessionNotFound):
        await store.load_state("nope")
    with pytest.raises(SessionNotFound):
        await store.load_session("nope")


async def test_a_session_is_created_once_even_by_two_stores(store, new_store):
    await store.create_session(SessionInfo("s1"))
    with pytest.raises(SessionExists):
        await store.create_session(SessionInfo("s1"))
    async with new_store() as other:
        with pytest.raises(SessionExists):
            await other.create_session(SessionInfo("s1"))


async def test_append_needs_a_session_this_store_created_or_loaded(store, new_store):
    async with new_store() as other:
        await other.create_session(SessionInfo("theirs"))
    with pytest.raises(SessionNotFound):
        await store.append("theirs", [TurnStarted(1)])
    await store.load_state("theirs")
    await store.append("theirs", [TurnStarted(1)])
    assert (await store.load_session("theirs"))[1] == [TurnStarted(1)]


async def test_an_append_that_cannot_be_encoded_writes_nothing(store):
    await store.create_session(SessionInfo("s1"))
    good = MessageAppended(say("fine"))
    unstorable = ToolResultMessage("c", "t")
    object.__setattr__(unstorable, "details", object())  # past the message's own checks
    bad = MessageAppended(unstorable)
    with pytest.raises(TypeError, match="a message_appended record cannot be stored as JSON"):
        await store.append("s1", [good, bad])
    await store.append("s1", [good])
    assert (await store.load_session("s1"))[1] == [good]


async def test_append_is_never_interrupted_by_a_cancel(store):
    await store.create_session(SessionInfo("s1"))
    with trio.CancelScope() as scope:
        scope.cancel()
        await store.append("s1", tool_turn(1, 1))
    assert (await store.load_session("s1"))[1] == tool_turn(1, 1)


async def test_closing_commits_what_is_buffered(new_store):
    async with new_store() as store:
        await store.create_session(SessionInfo("s1"))
        await store.append("s1", tool_turn(1, 1))
    async with new_store() as store:
        assert (await store.load_session("s1"))[1] == tool_turn(1, 1)


async def test_a_cancelled_block_still_commits_what_it_appended(new_store):
    with trio.CancelScope() as scope:
        async with new_store() as store:
            await store.create_session(SessionInfo("s1"))
            await store.append("s1", tool_turn(1, 1))
            scope.cancel()
            await trio.sleep_forever()
    async with new_store() as store:
        assert (await store.load_session("s1"))[1] == tool_turn(1, 1)


async def test_a_closed_store_says_so(new_store):
    store = new_store()
    with pytest.raises(StoreError, match="is not open"):
        await store.list_sessions()
    async with store:
        pass
    with pytest.raises(StoreError, match="is not open"):
        await store.sync("s1")


async def test_a_runtime_leaves_an_open_store_open_and_closes_its_own(new_store):
    spec = AgentSpec("a", ScriptedModel([say("one")]))
    async with new_store() as store:
        async with Runtime(store) as rt:
            await (await rt.create(spec, "s1")).run("hi")
        assert len((await store.load_session("s1"))[1]) > 0
    store = new_store()
    async with Runtime(store) as rt:
        await rt.create(spec, "s2")
    with pytest.raises(StoreError, match="is not open"):
        await store.list_sessions()


async def test_no_thread_of_the_store_outlives_it(new_store):
    async with new_store() as store:
        await store.create_session(SessionInfo("s1"))
        await store.append("s1", tool_turn(1, 1))
    # No thread is left but trio's cache of idle workers.
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    assert all(t.name.startswith("Trio thread") for t in others)


async def test_summaries_count_messages_and_name_the_parent(store):
    await store.create_session(SessionInfo("s1", created_at=1.0, agent_name="lead"))
    await store.create_session(SessionInfo("s2", created_at=2.0, parent_session_id="s1", seed_length=2))
    await store.create_session(SessionInfo("s3", created_at=3.0, agent_name="worker", spawned_by="s1"))
    await store.append("s1", tool_turns(2))
    summaries = await store.list_summaries()
    assert [
        (s.info.session_id, s.messages, s.info.parent_session_id, s.info.agent_name, s.info.spawned_by)
        for s in summaries
    ] == [
        ("s1", 8, None, "lead", None),
        ("s2", 0, "s1", None, None),
        ("s3", 0, None, "worker", "s1"),
    ]
    assert summaries[0].updated_at > summaries[0].info.created_at
    assert await store.list_sessions() == [s.info for s in summaries]


def break_the_database(new_store):
    new_store.execute("DROP TABLE records")


async def test_a_failed_write_fails_every_barrier_after_it(new_store):
    async with new_store() as store:
        await store.create_session(SessionInfo("s1"))
        break_the_database(new_store)
        await store.append("s1", [TurnStarted(1)])
        with pytest.raises(StoreError, match="no such table|does not exist"):
            await store.sync("s1")
        with pytest.raises(StoreError, match="failed: nothing more is written until it recovers"):
            await store.append("s1", [TurnStarted(2)])


async def test_a_failed_write_nobody_synced_fails_the_close(new_store):
    with pytest.raises(StoreError, match="no such table|does not exist"):
        async with new_store() as store:
            await store.create_session(SessionInfo("s1"))
            break_the_database(new_store)
            await store.append("s1", [TurnStarted(1)])


@pytest.mark.parametrize(
    "tampering, error",
    [
        (
            'UPDATE records SET data = \'{"type": "from_the_future"}\' WHERE seq = 5',
            "record 5 (cannot be read|is damaged)",  # SQLite checksums catch it first
        ),
        ("DELETE FROM records WHERE seq = 7", "record 7 is missing"),
    ],
)
async def test_a_bad_journal_names_the_session_and_the_record(new_store, tampering, error):
    async with new_store() as store:
        await store.create_session(SessionInfo("s1"), tool_turns(20))
    new_store.execute(tampering)
    async with new_store() as store:
        for load in (store.load_state, store.load_session):
            with pytest.raises(StoreCorrupt, match=f"session 's1': {error}"):
                await load("s1")


async def test_deleting_a_session_removes_its_journal_and_keeps_its_forks(stores):
    async with stores() as store, Runtime(store) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([say("one")])), "gone")
        await agent.run("hello")
        fork = await rt.fork("gone", at_message=2)
        await rt.dispose(agent)
        await store.delete_session("gone")
        with pytest.raises(SessionNotFound):
            await store.load_session("gone")
        with pytest.raises(SessionNotFound):
            await store.delete_session("gone")
        assert [s.session_id for s in await store.list_sessions()] == [fork.session_id]
        assert [m.text for m in (await store.load_state(fork.session_id)).state.messages] == ["hello", "one"]
    # Closed and opened again, the store still has no trace of it.
    async with stores() as store:
        assert [s.session_id for s in await store.list_sessions()] == [fork.session_id]
