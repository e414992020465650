"""The holder of one PostgreSQL session, taking in input posted from
elsewhere.

    python -m tests.journal.inbox_child DSN SESSION

Creates the session and prints HOLDER. Then takes in every input posted for
it (appending a record that queues it and consuming it in one commit),
printing TOOK and its text, until a cancel input comes: then prints DONE.
"""

from __future__ import annotations

import sys

import trio

from agentrio.journal import PostgresStore, SessionInfo
from agentrio.journal.records import InboxSpliced
from agentrio.mailbox import QueuedInput


async def main(dsn: str, session_id: str) -> None:
    async with PostgresStore(dsn) as store:
        await store.create_session(SessionInfo(session_id))
        print("HOLDER", store.holder, flush=True)
        while True:
            for item in await store.next_inputs(session_id):
                if item.kind == "cancel":
                    await store.consume_inputs(session_id, [item.id])
                    await store.sync(session_id)
                    print("DONE", flush=True)
                    return
                queued = QueuedInput(f"remote_{item.id}", item.message)
                await store.append(session_id, [InboxSpliced("next_step", 0, 0, [queued], "send")])
                await store.consume_inputs(session_id, [item.id])
                await store.sync(session_id)
                print("TOOK", item.message.text, flush=True)


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:])
