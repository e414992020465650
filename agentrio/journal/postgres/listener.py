"""A store's ear on the database: a second connection that LISTENs, in a
thread of its own."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Sequence

import psycopg
import trio
from psycopg import sql

from ..buffered import RETRY_FIRST, RETRY_MAX
from ..store import StoreError
from .connection import connect, redacted

log = logging.getLogger(__name__)

#: How often the thread looks up from waiting, to end if told to.
POLL_SECONDS = 1.0


class Listener:
    """Listens on ``channels``, whose payloads are session ids. ``changed``
    gives an event that the next notification for a channel and session
    sets: take it before reading the database, then wait for it if nothing
    new was there, and no notification falls between the two.

    A lost connection is opened again, with the store's backoff; once it
    is, every waiter is woken, to read again what it may have missed.

    ``serve`` connects and runs the thread under a trio task (start it in a
    nursery); ``stop(conn)`` ends it at once through a notification sent on
    the store's own connection; setting ``stopping`` ends it within
    ``POLL_SECONDS``."""

    def __init__(self, dsn: str, lease_seconds: float, channels: Sequence[str], where: str) -> None:
        self._dsn = dsn
        self._lease_seconds = lease_seconds
        self._channels = tuple(channels)
        self._where = where
        self._stop_payload = f"stop {secrets.token_hex(8)}"
        #: Set to end the thread at its next poll.
        self.stopping = False
        #: False once the thread has ended: nothing will be heard any more.
        self.alive = True
        self._events: dict[tuple[str, str | None], trio.Event] = {}

    def changed(self, channel: str, session_id: str) -> trio.Event:
        return self._events.setdefault((channel, session_id), trio.Event())

    def changed_any(self, channel: str) -> trio.Event:
        """Set by the next notification on ``channel``, for any session."""
        return self._events.setdefault((channel, None), trio.Event())

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        token = trio.lowlevel.current_trio_token()
        conn = await trio.to_thread.run_sync(self._connect)
        task_status.started()
        await trio.to_thread.run_sync(self._loop, conn, token, thread_name="agentrio store listener")

    def _connect(self) -> psycopg.Connection:
        conn = connect(self._dsn, self._lease_seconds, self._where)
        try:
            for channel in self._channels:
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        except psycopg.Error as exc:
            conn.close()
            raise StoreError(
                f"{self._where}: cannot listen for notifications: {redacted(str(exc), self._dsn)}"
            ) from exc
        return conn

    def _loop(self, conn: psycopg.Connection | None, token: trio.lowlevel.TrioToken) -> None:
        backoff = RETRY_FIRST
        try:
            while not self.stopping:
                try:
                    if conn is None:
                        conn = self._connect()
                        backoff = RETRY_FIRST
                        log.info("%s: listening again", self._where)
                        token.run_sync_soon(self._wake_all)  # what was missed is read again
                    for note in conn.notifies(timeout=POLL_SECONDS):
                        if note.payload == self._stop_payload:
                            return
                        token.run_sync_soon(self._deliver, note.channel, note.payload)
                except (psycopg.Error, StoreError) as exc:
                    if conn is not None:
                        log.warning(
                            "%s: lost the connection listening for notifications: %s",
                            self._where,
                            redacted(str(exc), self._dsn),
                        )
                        conn.close()
                        conn = None
                    self._pause(backoff)
                    backoff = min(backoff * 2, RETRY_MAX)
        finally:
            if conn is not None:
                conn.close()
            token.run_sync_soon(self._end)

    def _pause(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.stopping and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, POLL_SECONDS))

    def _deliver(self, channel: str, session_id: str) -> None:
        for key in ((channel, session_id), (channel, None)):
            event = self._events.pop(key, None)
            if event is not None:
                event.set()

    def _wake_all(self) -> None:
        events, self._events = self._events, {}
        for event in events.values():
            event.set()

    def _end(self) -> None:
        self.alive = False
        self._wake_all()

    def stop(self, conn: psycopg.Connection) -> None:
        """End the thread now. Blocking: call it from the store's thread."""
        self.stopping = True
        if not conn.closed:
            try:
                conn.execute("SELECT pg_notify(%s, %s)", (self._channels[0], self._stop_payload))
            except psycopg.Error:
                pass  # the poll ends it
