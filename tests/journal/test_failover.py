"""Two processes on one PostgreSQL database: a session is written by the one
that holds it, a paused holder that lost its lease writes nothing, and input
sent from one reaches the session the other holds."""

from __future__ import annotations

import re
import signal

import pytest

from agentrio import AgentSpec, Runtime, ScriptedModel, UserMessage
from agentrio.journal import RemoteInput, SessionHeld
from agentrio.journal.records import MessageAppended

from .places import LEASE, Place
from .processes import read_line, start


@pytest.fixture
def place(dsn):
    return Place("postgres", dsn)


async def test_a_session_open_in_another_process_is_refused(place, tmp_path):
    stderr = tmp_path / "holder.stderr"
    child = await start("tests.journal.paused_child", place.location, "s1", 30, stderr=stderr)
    try:
        kind, holder = (await read_line(child, stderr)).split()
        assert kind == "HOLDER" and f":{child.pid}:" in holder
        async with Runtime(place()) as rt:
            with pytest.raises(SessionHeld, match=f"session 's1' is held by {holder}, whose lease ends at "):
                await rt.create(AgentSpec("a", ScriptedModel([])), "s1")
        await child.stdin.aclose()
        assert await read_line(child, stderr) == "DONE"
    finally:
        child.kill()
        await child.wait()


async def test_a_holder_paused_past_its_lease_writes_nothing_after_the_takeover(place, tmp_path):
    stderr = tmp_path / "paused.stderr"
    child = await start("tests.journal.paused_child", place.location, "s1", LEASE, stderr=stderr)
    try:
        assert (await read_line(child, stderr)).startswith("HOLDER ")
        for n in range(1, 4):
            await child.stdin.send_all(b"go\n")
            assert await read_line(child, stderr) == f"ACK {n}"

        child.send_signal(signal.SIGSTOP)
        async with place() as taker:
            # Refused while the paused holder's lease runs; taken once it ends.
            with pytest.raises(SessionHeld):
                await taker.load_state("s1")
            await taker.acquire("s1", wait=True)
            loaded = await taker.load_state("s1")
            assert [m.text for m in loaded.state.messages] == ["child 1", "child 2", "child 3"]
            child.send_signal(signal.SIGCONT)
            # Both write at once: the former holder is refused every time.
            for n in range(4, 7):
                await child.stdin.send_all(b"go\n")
                await taker.append("s1", [MessageAppended(UserMessage(f"taker {n}"))])
                await taker.sync("s1")
                line = await read_line(child, stderr)
                # (Found by the holder's own lease clock, or by the refused commit.)
                assert re.match(
                    f"REFUSED {n} LeaseLost: session 's1' (was taken over|is no longer held)", line
                )
        await child.stdin.aclose()
        assert await read_line(child, stderr) == "DONE"
        assert await child.wait() == 0
    finally:
        child.kill()
        await child.wait()

    # What each side acknowledged, once, in order; nothing else.
    assert [r.message.text for r in place.stored_records("s1")] == [
        "child 1",
        "child 2",
        "child 3",
        "taker 4",
        "taker 5",
        "taker 6",
    ]


async def test_input_sent_from_another_process_reaches_the_holder(place, tmp_path):
    stderr = tmp_path / "inbox.stderr"
    child = await start("tests.journal.inbox_child", place.location, "s1", stderr=stderr)
    try:
        assert (await read_line(child, stderr)).startswith("HOLDER ")
        async with place() as sender:
            for text in ("check the logs", "then the config"):
                await sender.post_input("s1", RemoteInput("followup", UserMessage(text)))
                assert await read_line(child, stderr) == f"TOOK {text}"
            await sender.post_input("s1", RemoteInput("cancel"))
        assert await read_line(child, stderr) == "DONE"
        assert await child.wait() == 0
    finally:
        child.kill()
        await child.wait()
    assert place.execute("SELECT count(*) FROM inputs") == [(0,)]
    queued = [r.items[0].message.text for r in place.stored_records("s1")]
    assert queued == ["check the logs", "then the config"]
