"""The inbox: splice and claim semantics, journaled."""

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrio.journal import Journal, MemoryStore, SessionInfo, SessionState
from agentrio.journal.projection import JournalCorrupt
from agentrio.mailbox import Inbox, InboxSpliced, QueuedInput, normalize_range
from agentrio.messages import UserMessage


async def _inbox():
    store = MemoryStore()
    await store.create_session(SessionInfo("s"))
    changes = []
    journal = Journal(store, "s", SessionState())
    inbox = Inbox(
        journal.state.queue, journal.append, lambda record, removed: changes.append((record, removed))
    )
    return inbox, store, changes


def _texts(items):
    return [q.message.text for q in items]


async def _records(store):
    return (await store.load_session("s"))[1]


@given(
    length=st.integers(0, 6),
    start=st.integers(-10, 10),
    count=st.none() | st.integers(-3, 10),
    inserted=st.integers(0, 3),
)
def test_splice_matches_python_list_semantics(length, start, count, inserted):
    reference = list(range(length))
    begin = slice(start, None).indices(length)[0]
    stop = length if count is None else begin + max(count, 0)
    new = [100 + i for i in range(inserted)]
    reference[begin:stop] = new

    async def main():
        inbox, _store, _ = await _inbox()
        await inbox.splice("next_turn", 0, 0, [str(i) for i in range(length)])
        await inbox.splice("next_turn", start, count, [str(v) for v in new])
        return [int(t) for t in _texts(inbox.next_turn)]

    assert trio.run(main) == reference


def test_normalize_range_clamps():
    assert normalize_range(3, -1, None) == (2, 1)
    assert normalize_range(3, -10, 1) == (0, 1)
    assert normalize_range(3, 7, 2) == (3, 0)
    assert normalize_range(3, 1, 99) == (1, 2)
    assert normalize_range(3, 1, -4) == (1, 0)


async def test_a_no_op_writes_nothing():
    inbox, store, changes = await _inbox()
    assert await inbox.splice("next_step", 0, 0) == []
    assert await inbox.splice("next_step", 5, 3) == []
    assert await _records(store) == [] and changes == []


async def test_each_change_is_one_journal_record_written_before_memory():
    inbox, store, changes = await _inbox()
    first = await inbox.put("a", "next_turn")
    await inbox.put("b", "next_turn")
    await inbox.splice("next_turn", -1, 1, ["c"])
    records = await _records(store)
    assert [(r.target, r.start, r.delete_count, _texts(r.items), r.reason) for r in records] == [
        ("next_turn", 0, 0, ["a"], "send"),
        ("next_turn", 1, 0, ["b"], "send"),
        ("next_turn", 1, 1, ["c"], "send"),
    ]
    assert _texts(inbox.next_turn) == ["a", "c"]
    assert len(changes) == 3 and _texts(changes[2][1]) == ["b"]
    assert inbox.next_turn[0] == first


async def test_memory_is_unchanged_when_the_journal_write_fails():
    inbox, store, _ = await _inbox()
    await inbox.put("a", "next_step")

    async def broken(session_id, records):
        raise OSError("disk full")

    store.append = broken
    with pytest.raises(OSError):
        await inbox.put("b", "next_step")
    assert _texts(inbox.next_step) == ["a"]


async def test_ids_are_unique_across_both_queues():
    inbox, _, _ = await _inbox()
    item = QueuedInput("in_1", UserMessage("x"))
    await inbox.put(item, "next_step")
    with pytest.raises(JournalCorrupt, match="already pending"):
        await inbox.put(item, "next_turn")
    assert _texts(inbox.next_turn) == []


async def test_claim_takes_all_next_step_then_the_first_next_turn():
    inbox, store, _changes = await _inbox()
    for text in ["t1", "t2"]:
        await inbox.put(text, "next_turn")
    for text in ["s1", "s2"]:
        await inbox.put(text, "next_step")
    claimed = await inbox.claim("next_turn")
    assert _texts(claimed) == ["s1", "s2", "t1"]
    assert _texts(inbox.next_turn) == ["t2"] and inbox.next_step == ()
    assert _texts(await inbox.claim("next_step")) == []
    claims = [r for r in await _records(store) if r.reason == "claim"]
    assert len(claims) == 2 and not any(r.discards for r in claims)


async def test_claim_for_a_next_step_leaves_follow_ups_alone():
    inbox, _, _ = await _inbox()
    await inbox.put("t1", "next_turn")
    await inbox.put("s1", "next_step")
    assert _texts(await inbox.claim("next_step")) == ["s1"]
    assert _texts(inbox.next_turn) == ["t1"]


async def test_remove_and_clear_are_discards():
    inbox, store, _changes = await _inbox()
    a = await inbox.put("a", "next_turn")
    await inbox.put("b", "next_step")
    assert await inbox.remove(a.id) is True
    assert await inbox.remove(a.id) is False
    assert _texts(await inbox.clear()) == ["b"]
    discards = [r for r in await _records(store) if r.discards]
    assert [r.reason for r in discards] == ["remove", "clear"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                ["put_step", "put_turn", "claim_turn", "claim_step", "remove", "clear", "splice"]
            ),
            st.integers(-3, 3),
        ),
        max_size=25,
    )
)
def test_queues_are_always_the_projection_of_the_log(operations):
    async def main():
        inbox, store, _ = await _inbox()
        for op, n in operations:
            if op == "put_step":
                await inbox.put(f"s{n}", "next_step")
            elif op == "put_turn":
                await inbox.put(f"t{n}", "next_turn")
            elif op == "claim_turn":
                await inbox.claim("next_turn")
            elif op == "claim_step":
                await inbox.claim("next_step")
            elif op == "remove" and inbox.next_turn:
                await inbox.remove(inbox.next_turn[n % len(inbox.next_turn)].id)
            elif op == "clear":
                await inbox.clear()
            elif op == "splice":
                await inbox.splice("next_step", n, 1, [f"x{n}"])
        rebuilt = SessionState()
        for record in await _records(store):
            assert isinstance(record, InboxSpliced)
            rebuilt.apply(record)
        assert rebuilt.next_step == list(inbox.next_step)
        assert rebuilt.next_turn == list(inbox.next_turn)
        ids = [q.id for q in (*inbox.next_step, *inbox.next_turn)]
        assert len(ids) == len(set(ids))

    trio.run(main)


def test_a_corrupt_splice_in_the_log_is_refused():
    state = SessionState()
    with pytest.raises(JournalCorrupt, match="outside next_step"):
        state.apply(InboxSpliced("next_step", 2, 0, [], "send"))
