"""Claims: a session has one writer at a time (``Store.claim_session``)."""

from __future__ import annotations

import pytest

from agentrio import MemoryStore, SessionHeld, SQLiteStore, StoreError


async def test_a_claimed_session_cannot_be_claimed_again_until_released(stores):
    async with stores() as store:
        await store.claim_session("s1")
        with pytest.raises(SessionHeld, match="session 's1' is already claimed by a writer of this store"):
            await store.claim_session("s1")
        await store.claim_session("s2")  # claims are per session
        await store.release_session("s1")
        await store.release_session("s1")  # releasing twice is harmless
        await store.claim_session("s1")
        with pytest.raises(SessionHeld):
            await store.claim_session("s2")


async def test_closing_the_store_releases_its_claims(stores):
    store = stores()
    async with store:
        async with store:  # a nested block does not end the claims
            await store.claim_session("s1")
        with pytest.raises(SessionHeld):
            await store.claim_session("s1")
    async with stores() as store:
        await store.claim_session("s1")


async def test_two_sqlite_stores_on_one_file_share_claims(db, tmp_path):
    async with SQLiteStore(db) as first, SQLiteStore(tmp_path / "." / db.name) as second:
        await first.claim_session("s1")
        with pytest.raises(SessionHeld, match=r"'s1' is already claimed by a writer of SQLiteStore\("):
            await second.claim_session("s1")
        await second.release_session("s1")  # not its claim: left alone
        with pytest.raises(SessionHeld):
            await second.claim_session("s1")
        await second.claim_session("s2")
    async with SQLiteStore(tmp_path / "other.db") as other:
        await other.claim_session("s1")  # another file, other claims
    async with SQLiteStore(db) as third:  # both closed: nothing is held
        await third.claim_session("s1")
        await third.claim_session("s2")


async def test_memory_stores_do_not_share_claims():
    async with MemoryStore() as first, MemoryStore() as second:
        await first.claim_session("s1")
        await second.claim_session("s1")


async def test_a_closed_sqlite_store_claims_nothing(db):
    with pytest.raises(StoreError, match="is not open"):
        await SQLiteStore(db).claim_session("s1")
