"""Which process writes a session of an SQLite store: one lock file per
session, beside the database, held with ``flock``.

The kernel holds the lock for the open file, so it ends with the process
that took it, however that process ends (SIGKILL and crashes included):
a dead holder never blocks a session, and the next opener takes it over
and repairs it. The lock is not inherited across ``exec`` (the descriptor
is close-on-exec), so a tool's subprocess cannot keep it. Two opens of the
file conflict even in one process, so a second store on the same database
is refused too (``SQLiteStore`` checks its own process's claims first).

A released lock file is unlinked before it is unlocked, and a lock is only
taken on a file that is still the one at its path, so two openers never
hold two files of one session. A holder writes its pid, host and start
into its file, to be named in ``SessionLocked``.
"""

from __future__ import annotations

import datetime
import fcntl
import hashlib
import json
import os
import socket
import time
from pathlib import Path

import attrs

from ..store import SessionHeld, StoreError


@attrs.frozen
class Holder:
    """Who holds a session, as its lock file says."""

    pid: int
    host: str
    #: When it took the session (``time.time()``).
    since: float

    def __str__(self) -> str:
        when = datetime.datetime.fromtimestamp(self.since)  # noqa: DTZ006 - the reader's local time
        started = when.isoformat(sep=" ", timespec="seconds")
        return f"pid {self.pid} on {self.host}, since {started}"


class SessionLocked(SessionHeld):
    """Another process (or another store on the same file) has the session
    open for writing. ``holder`` says who, when its lock file tells."""

    def __init__(self, session_id: str, holder: Holder | None) -> None:
        self.session_id = session_id
        self.holder = holder
        if holder is None:
            where = "in another process"
        elif (holder.pid, holder.host) == (os.getpid(), socket.gethostname()):
            where = f"by another store on the same file in this process ({holder})"
        else:
            where = f"in another process ({holder})"
        super().__init__(
            f"session {session_id!r} is open for writing {where}: a session has one writer at a "
            "time; it can be read meanwhile, and opened once that writer ends"
        )


@attrs.define
class Lock:
    """A session's lock file, held: its path and open descriptor."""

    session_id: str
    path: Path
    fd: int


class SessionLocks:
    """The lock files of one database's sessions, in the directory
    ``<database>-locks`` beside the file the path resolves to (made on
    first use). Each call is a few non-blocking system calls on a small
    local file; none waits for another process."""

    def __init__(self, database: Path) -> None:
        real = Path(os.path.realpath(database))
        self.directory = real.with_name(f"{real.name}-locks")

    def path(self, session_id: str) -> Path:
        # Any session id makes a safe file name.
        return self.directory / f"{hashlib.sha256(session_id.encode()).hexdigest()[:32]}.lock"

    def acquire(self, session_id: str) -> Lock:
        """Hold the session's lock, or raise ``SessionLocked`` at once."""
        path = self.path(session_id)
        while True:
            fd = self._open(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise SessionLocked(session_id, holder) from None
            except OSError as exc:
                os.close(fd)
                raise StoreError(f"{path}: cannot lock session {session_id!r}: {exc}") from exc
            # Released (unlinked) by its holder between our open and our lock:
            # the lock is on the path's file now, a new one.
            if _same_file(fd, path):
                break
            os.close(fd)
        record = {"session_id": session_id, "pid": os.getpid(), "host": socket.gethostname()}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({**record, "since": time.time()}).encode(), 0)
        except OSError:
            pass  # only who holds it goes unsaid
        return Lock(session_id, path, fd)

    def release(self, lock: Lock) -> None:
        """Idempotent. Unlinked while still locked: whoever opened the file
        meanwhile finds it gone once it gets the lock, and opens it anew."""
        if lock.fd < 0:
            return
        try:
            lock.path.unlink(missing_ok=True)
        except OSError:
            pass  # left behind unlocked: the next opener takes it
        finally:
            os.close(lock.fd)
            lock.fd = -1

    def _open(self, path: Path) -> int:
        # Close-on-exec (Python's default): no subprocess keeps the lock.
        try:
            try:
                return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:
                self.directory.mkdir(exist_ok=True)
                return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"{path}: cannot open the session's lock file: {exc}") from exc


def _same_file(fd: int, path: Path) -> bool:
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)


def _read_holder(fd: int) -> Holder | None:
    """Who the lock file names, if it says (its holder may be writing it)."""
    try:
        record = json.loads(os.pread(fd, 4096, 0))
        holder = Holder(int(record["pid"]), str(record["host"]), float(record["since"]))
        str(holder)  # a time it can tell
    except (OSError, ValueError, KeyError, TypeError, OverflowError):
        return None
    return holder
