"""The journal stores each image and document once (content-addressed
blobs beside the records): a session that sends the same image three times
stores it once, and restores the same bytes."""

from __future__ import annotations

import os
import sqlite3

import pytest

from agentrio import AgentSpec, Document, Image, Runtime, ScriptedModel, SQLiteStore, UserMessage
from agentrio.cli.transcript import transcript
from agentrio.journal import StoreCorrupt
from agentrio.journal.blobs import MARK, extract, restore
from agentrio.journal.codec import encode_record
from agentrio.journal.records import MessageAppended
from agentrio.messages import AssistantMessage, Text

from ..helpers import say

SIZE = 200_000


def big_png() -> Image:
    # Random bytes after the signature: nothing for a page or a WAL to compress.
    return Image(b"\x89PNG\r\n\x1a\n" + os.urandom(SIZE - 8), "image/png")


def stored_bytes(place) -> int:
    records = place.execute("SELECT COALESCE(SUM(length(data)), 0) FROM records")[0][0]
    blobs = place.execute("SELECT COALESCE(SUM(length(data)), 0) FROM blobs")[0][0]
    return records + blobs


async def test_an_image_sent_three_times_is_stored_once_and_restored_byte_for_byte(new_store):
    image = big_png()
    async with Runtime(new_store()) as rt:
        agent = await rt.create(
            AgentSpec("a", ScriptedModel([say("one"), say("two"), say("three")])), session_id="s"
        )
        before = stored_bytes(new_store)
        for word in ("Look.", "Again.", "Once more."):
            await agent.run(UserMessage([Text(word), image]))
        await rt.store.sync()
        grown = stored_bytes(new_store) - before
    # Three user messages in history, each also queued through the inbox:
    # six records that hold the image, and one blob.
    assert grown < 2 * SIZE, grown
    assert new_store.execute("SELECT COUNT(*) FROM blobs")[0][0] == 1
    model = ScriptedModel([say("four")])
    async with Runtime(new_store()) as rt:
        restored = await rt.create(AgentSpec("a", model), session_id="s")
        images = [p for m in restored.messages if m.role == "user" for p in m.content if isinstance(p, Image)]
        assert images == [image] * 3 and all(i.data == image.data for i in images)
        await restored.run("And now?")
    # What the model is sent after a restore holds the image as it was.
    assert model.requests[0].messages[0].content[1].data == image.data


async def test_a_damaged_blob_is_store_corrupt_not_a_wrong_image(tmp_path):
    place_db = tmp_path / "s.db"
    image = big_png()
    async with Runtime(SQLiteStore(place_db)) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([say("ok")])), session_id="s")
        await agent.run(UserMessage([image]))
    with sqlite3.connect(place_db) as conn:
        conn.execute("UPDATE blobs SET data = ?", (b"\x89PNG\r\n\x1a\n" + bytes(SIZE - 8),))
    conn.close()
    with pytest.raises(StoreCorrupt, match="damaged"):
        async with Runtime(SQLiteStore(place_db)) as rt:
            await rt.create(AgentSpec("a", ScriptedModel([])), session_id="s")


def test_extract_moves_out_only_what_comes_back_the_same():
    image = big_png()
    text = encode_record(MessageAppended(UserMessage([Text("hi"), image])))
    stored, blobs = extract(text)
    assert stored.startswith(MARK) and len(stored) < 300 and list(blobs.values()) == [image.data]
    assert restore(stored.encode(), blobs.get, "here") == text.encode()
    # A small image stays inline; so does a record whose own text looks like a reference.
    small = encode_record(MessageAppended(UserMessage([Image(b"\x89PNG\r\n\x1a\n", "image/png")])))
    assert extract(small) == (small, {})
    lookalike = encode_record(MessageAppended(UserMessage([Text("blob:sha256:" + "0" * 64), image])))
    assert extract(lookalike) == (lookalike, {})
    # Text that only mentions a part's shape is not touched.
    said = encode_record(
        MessageAppended(AssistantMessage([Text('{"type":"image","data":"' + "A" * 4000 + '"}')]))
    )
    assert extract(said) == (said, {})


async def test_a_transcript_notes_each_image_and_document_instead_of_its_bytes(tmp_path):
    image, pdf = big_png(), Document(b"%PDF-1.4\n" + bytes(3000), "application/pdf", "r.pdf")
    async with Runtime(SQLiteStore(tmp_path / "s.db")) as rt:
        agent = await rt.create(AgentSpec("a", ScriptedModel([say("ok")])), session_id="s")
        await agent.run(UserMessage([Text("Read these."), image, pdf]))
        info, records = await rt.store.load_session("s")
    lines = [line.strip() for line in transcript(info, records)]
    start = next(i for i, line in enumerate(lines) if line.endswith("user: Read these."))
    assert lines[start + 1 : start + 3] == [
        f"[image/png, {SIZE:,} bytes]",
        "[application/pdf r.pdf, 3,009 bytes]",
    ]
