"""``submit`` and ``outcome`` on an SQLite store, for the runtimes of one
host. Without a server to post input to, a prompt is queued in the
session's own journal: the session must not be open for writing anywhere
(``SessionHeld``), and the runtime that opens it next runs the prompt once
resumed (``Runtime(store, resume=True)``, or ``agent.resume()``). Without
notifications, a wait for an outcome wakes on each commit of its own store
and, for another process's commits, re-reads the journal every
``OTHERS_EVERY`` seconds."""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from ..._ids import new_id
from ...mailbox.items import InboxSpliced, QueuedInput
from ...messages import UserMessage
from ..projection import SessionState
from ..records import Record
from ..store import SessionInfo, SessionNotFound, check_info

if TYPE_CHECKING:
    from .store import SQLiteStore

#: Seconds between two reads of a journal that another process may write.
OTHERS_EVERY = 1.0


async def submit(store: SQLiteStore, session_id: str, message: UserMessage, name: str) -> str:
    """Queue ``message`` as a follow-up at the end of the session's inbox,
    creating the session if it is new; durable when this returns."""
    info = SessionInfo(session_id, agent_name=name)
    check_info(info)
    await store.claim_session(session_id)
    try:
        try:
            state = (await store.load_state(session_id)).state
        except SessionNotFound:
            await store.create_session(info)
            state = SessionState()
        input_id = new_id("input")
        queued = QueuedInput(input_id, message)
        await store.append(session_id, [InboxSpliced("next_turn", len(state.next_turn), 0, [queued], "send")])
        await store.sync()
    finally:
        await store.release_session(session_id)
    return input_id


async def next_records(store: SQLiteStore, session_id: str, after: int) -> list[tuple[int, Record]]:
    """The session's committed records after sequence number ``after``, once
    there is one."""
    while True:
        changed = store.committed_event()
        _, records = await store.load_session(session_id)
        if len(records) > after:
            return list(enumerate(records, 1))[after:]
        with trio.move_on_after(OTHERS_EVERY):
            await changed.wait()
