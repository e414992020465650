"""A holder of one PostgreSQL session, to be paused (SIGSTOP) past its lease.

    python -m tests.journal.paused_child DSN SESSION LEASE

Creates the session and prints HOLDER and its holder id. Then, for each line
read from stdin, appends one message ("child N") and syncs it, printing
ACK N once the sync returned, or REFUSED N and the error if the append or
the sync raised. Prints DONE when stdin ends.
"""

from __future__ import annotations

import sys

import trio

from agentrio import UserMessage
from agentrio.journal import PostgresStore, SessionInfo, StoreError
from agentrio.journal.records import MessageAppended


async def main(dsn: str, session_id: str, lease: str) -> None:
    async with PostgresStore(dsn, lease=float(lease)) as store:
        await store.create_session(SessionInfo(session_id))
        print("HOLDER", store.holder, flush=True)
        count = 0
        while await trio.to_thread.run_sync(sys.stdin.readline):
            count += 1
            try:
                await store.append(session_id, [MessageAppended(UserMessage(f"child {count}"))])
                await store.sync(session_id)
            except StoreError as exc:
                print(f"REFUSED {count} {type(exc).__name__}: {exc}", flush=True)
            else:
                print(f"ACK {count}", flush=True)
        await store.release(session_id)
    print("DONE", flush=True)


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:])
