"""Two processes on one SQLite file: a session is written by one of them at
a time. While one has it open, the other's open is refused at once, naming
the holder, and changes nothing; reading works meanwhile. Once the holder
is killed (SIGKILL) the session is taken over and repaired; once it has
ended normally the session opens at once."""

from __future__ import annotations

import os
import re
import signal
import socket

import pytest
import trio

from agentrio import (
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    AgentSpec,
    Runtime,
    ScriptedModel,
    SessionHeld,
    SQLiteStore,
)
from agentrio.journal.records import ToolCallStarted
from agentrio.journal.sqlite.locks import SessionLocked, SessionLocks

from ..helpers import say
from ..tools.processes import sleepers, unique_duration
from .crash_child import SESSION
from .processes import read_line, start


def held_by(session_id: str, pid: int) -> str:
    here = pid == os.getpid()
    where = "by another store on the same file in this process" if here else "in another process"
    host = re.escape(socket.gethostname())
    return rf"^session '{session_id}' is open for writing {where} \(pid {pid} on {host}, since "


def spec(*replies) -> AgentSpec:
    return AgentSpec("a", ScriptedModel(list(replies), strict=True))


async def test_a_session_open_in_another_process_is_refused_then_taken_over_once_that_process_is_killed(
    db, tmp_path
):
    stderr = tmp_path / "holder.stderr"
    # The holder stops inside an exclusive tool call, its turn open.
    child = await start("tests.journal.crash_child", "sqlite", db, "exclusive_tool", stderr=stderr)
    try:
        assert await read_line(child, stderr) == "READY"
        async with Runtime(SQLiteStore(db)) as rt:
            _, before = await rt.store.load_session(SESSION)
            with trio.fail_after(2), pytest.raises(SessionHeld, match=held_by(SESSION, child.pid)) as held:
                await rt.create(spec(say("never said")), SESSION)
            assert (held.value.session_id, held.value.holder.pid) == (SESSION, child.pid)
            # Refused before anything was written: no repair of the holder's open turn.
            _, after = await rt.store.load_session(SESSION)
            assert after == before and isinstance(after[-1], ToolCallStarted)
            assert [s.info.session_id for s in await rt.store.list_summaries()] == [SESSION]
            with pytest.raises(SessionHeld, match=held_by(SESSION, child.pid)):
                await rt.store.delete_session(SESSION)

            child.kill()
            await child.wait()
            with trio.fail_after(2):
                agent = await rt.create(spec(say("recovered")), SESSION)
            # Taken over and repaired as after any crash.
            assert [(r.tool_name, r.text.split(":")[0]) for r in agent.messages[2:]] == [
                ("echo", "echo"),
                ("exclusive", TOOL_OUTCOME_UNKNOWN),
                ("echo", TOOL_NOT_STARTED),
            ]
            assert (await agent.run("after the takeover")).stop_reason == "completed"
    finally:
        child.kill()
        await child.wait()


async def test_a_session_opens_at_once_after_its_holder_has_ended(db, tmp_path):
    stderr = tmp_path / "holder.stderr"
    child = await start("tests.journal.holder_child", db, "s1", stderr=stderr)
    try:
        assert await read_line(child, stderr) == "HOLDING"
        async with Runtime(SQLiteStore(db)) as rt:
            with pytest.raises(SessionHeld, match=held_by("s1", child.pid)):
                await rt.create(spec(), "s1")
            await child.stdin.aclose()
            assert await read_line(child, stderr) == "DONE"
            assert await child.wait() == 0
            with trio.fail_after(1):
                await rt.create(spec(), "s1")
    finally:
        child.kill()
        await child.wait()
    # Released lock files are removed, not left to pile up.
    assert list(SessionLocks(db).directory.iterdir()) == []


async def test_a_subprocess_that_outlives_the_holder_does_not_keep_the_session(db, tmp_path):
    marker = unique_duration()
    stderr = tmp_path / "holder.stderr"
    child = await start("tests.journal.holder_child", db, "s1", marker, stderr=stderr)
    try:
        assert await read_line(child, stderr) == "HOLDING"
        child.kill()
        await child.wait()
        assert sleepers(marker)  # it inherited what it could, and lives on
        async with Runtime(SQLiteStore(db)) as rt:
            with trio.fail_after(1):
                await rt.create(spec(), "s1")
    finally:
        child.kill()
        await child.wait()
        for pid in sleepers(marker):
            os.kill(pid, signal.SIGKILL)


async def test_a_held_session_is_refused_to_any_other_opener_of_its_lock_even_in_this_process(db):
    async with SQLiteStore(db) as store:
        await store.claim_session("s1")
        locks = SessionLocks(db)
        with pytest.raises(SessionLocked, match=held_by("s1", os.getpid())):
            locks.acquire("s1")
        await store.release_session("s1")
        lock = locks.acquire("s1")
        with pytest.raises(SessionHeld, match=held_by("s1", os.getpid())):
            await store.claim_session("s1")
        locks.release(lock)
        locks.release(lock)  # releasing twice is harmless
        await store.claim_session("s1")
