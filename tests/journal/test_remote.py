"""Input and records from anywhere, on PostgreSQL: input posted through the
database wakes the session's holder and is taken in exactly once; a session
written elsewhere can be followed record by record."""

from __future__ import annotations

import pytest
import trio

from agentrio import UserMessage
from agentrio.journal import LeaseLost, RemoteInput, SessionInfo, SessionNotFound, StoreError
from agentrio.journal.records import InboxSpliced, MessageAppended
from agentrio.mailbox import QueuedInput

from .places import Place


@pytest.fixture
def place(dsn):
    return Place("postgres", dsn)


def steer(text: str) -> RemoteInput:
    return RemoteInput("steer", UserMessage(text))


def taken_in(item: RemoteInput) -> InboxSpliced:
    """The record a holder appends to queue the input."""
    return InboxSpliced("next_step", 0, 0, [QueuedInput(f"remote_{item.id}", item.message)], "send")


def posted(place) -> list[str]:
    return [
        text for (text,) in place.execute("SELECT data::json->'message'->>'content' FROM inputs ORDER BY id")
    ]


async def test_input_posted_elsewhere_is_durable_at_once_and_wakes_the_holder(place):
    async with place() as holder, place() as sender:
        await holder.create_session(SessionInfo("s1"))
        received = []

        async def wait_for_input():
            received.extend(await holder.next_inputs("s1"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_for_input)
            await trio.sleep(0.2)  # the holder waits on the database
            item = await sender.post_input("s1", steer("look at the logs"))
            assert posted(place) == ["look at the logs"]  # before the holder ran
        assert received == [item] and item.id > 0


async def test_an_input_is_taken_in_exactly_once_across_a_takeover(place):
    async with place() as former, place() as sender:
        await former.create_session(SessionInfo("s1"))
        first = await sender.post_input("s1", steer("first"))
        second = await sender.post_input("s1", steer("second"))
        assert await former.next_inputs("s1") == [first, second]
        # The first is taken in: its record and its deletion commit together.
        await former.append("s1", [taken_in(first)])
        await former.consume_inputs("s1", [first.id])
        await former.sync("s1")
        assert posted(place) == ["second"]
        # The lease ends before the second is committed: neither its record
        # nor its deletion is written.
        place.execute("UPDATE leases SET expires_at = clock_timestamp()")
        async with place() as taker:
            await taker.load_state("s1")
            await former.append("s1", [taken_in(second)])
            await former.consume_inputs("s1", [second.id])
            with pytest.raises(LeaseLost):
                await former.sync("s1")
            assert await taker.next_inputs("s1") == [second]
            await taker.append("s1", [taken_in(second)])
            await taker.consume_inputs("s1", [second.id])
            await taker.sync("s1")
    assert posted(place) == []
    spliced = [r.items[0].message.text for r in place.stored_records("s1")]
    assert spliced == ["first", "second"]


async def test_inputs_are_handed_out_once_and_in_order(place):
    async with place() as holder, place() as sender:
        await holder.create_session(SessionInfo("s1"))
        items = [await sender.post_input("s1", steer(f"input {n}")) for n in range(3)]
        assert await holder.next_inputs("s1") == items
        with trio.move_on_after(0.3) as waited:
            await holder.next_inputs("s1")  # nothing new
        assert waited.cancelled_caught
        cancel = await sender.post_input("s1", RemoteInput("cancel"))
        assert await holder.next_inputs("s1") == [cancel]


async def test_inputs_are_for_the_holder_and_for_existing_sessions(place):
    async with place() as holder, place() as other:
        await holder.create_session(SessionInfo("s1"))
        with pytest.raises(SessionNotFound, match="not held by"):
            await other.next_inputs("s1")
        with pytest.raises(SessionNotFound):
            await other.post_input("nope", steer("lost"))
    with pytest.raises(ValueError, match="a steer input needs a message"):
        RemoteInput("steer")
    with pytest.raises(ValueError, match="a cancel input takes no message"):
        RemoteInput("cancel", UserMessage("why"))


async def test_a_follower_sees_every_committed_record_once_and_in_order(place):
    written = [MessageAppended(UserMessage(f"message {n}")) for n in range(30)]
    async with place() as writer, place() as follower:
        await writer.create_session(SessionInfo("s1"))
        seen = []

        async def follow():
            after = 0
            while after < len(written):
                batch = await follower.next_records("s1", after)
                seen.extend(batch)
                after = batch[-1][0]

        async with trio.open_nursery() as nursery:
            nursery.start_soon(follow)
            for start in range(0, len(written), 7):
                await writer.append("s1", written[start : start + 7])
                await writer.sync("s1")
                await trio.sleep(0.01)
    assert seen == list(enumerate(written, 1))


async def test_closing_the_store_ends_a_wait_for_input_with_an_error(place):
    errors = []

    async def wait_for_input(store):
        try:
            await store.next_inputs("s1")
        except StoreError as exc:
            errors.append(exc)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery, place() as holder:
            await holder.create_session(SessionInfo("s1"))
            nursery.start_soon(wait_for_input, holder)
            await trio.sleep(0.2)
    assert len(errors) == 1
