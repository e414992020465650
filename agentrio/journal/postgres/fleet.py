"""The fleet's statements: input submitted for sessions that no runtime may
hold yet, and runtimes claiming the sessions that have work. Each function
takes the store's ``Database`` and runs in the store's thread.

A session's lease row says who runs it. ``holder IS NULL``: released (or
never run); a holder whose lease has run out: it died (or paused) while
holding it, or released it with work left (``leave``). A session is
runnable when no live lease holds it and it has input posted, or was left
by a holder that did not release it cleanly: crash repair, then the
continued turn, then its queued input, are for the runtime that claims it.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from psycopg import errors

from ..rows import SESSION_COLUMNS, session_row
from ..store import SessionInfo, SessionNotFound
from .connection import one
from .database import Database

#: The sessions of known specs that no live lease holds and that have work,
#: oldest lease first, locked without waiting for a lock another claimer
#: holds (so concurrent claimers split them), taken over with a new token.
_CLAIM = """
WITH runnable AS (
    SELECT leases.session_id, sessions.agent_name FROM leases JOIN sessions USING (session_id)
    WHERE sessions.agent_name = ANY(%(specs)s)
      AND (leases.holder IS NULL OR leases.expires_at <= clock_timestamp())
      AND (leases.holder IS NOT NULL
           OR EXISTS (SELECT 1 FROM inputs WHERE inputs.session_id = leases.session_id))
    ORDER BY leases.expires_at
    LIMIT %(limit)s
    FOR UPDATE OF leases SKIP LOCKED
)
UPDATE leases SET holder = %(holder)s, token = leases.token + 1,
    expires_at = clock_timestamp() + make_interval(secs => %(lease)s)
FROM runnable WHERE leases.session_id = runnable.session_id
RETURNING leases.session_id, leases.token, runnable.agent_name
"""

#: Seconds until the earliest lease of another holder on a session of these
#: specs runs out (NULL: none is held).
_NEXT_EXPIRY = """
SELECT extract(epoch FROM min(expires_at) - clock_timestamp())::float8
FROM leases JOIN sessions USING (session_id)
WHERE sessions.agent_name = ANY(%(specs)s) AND leases.holder IS NOT NULL AND leases.holder <> %(holder)s
"""

#: Sessions with work that no runtime claiming these specs can run.
_UNKNOWN = """
SELECT DISTINCT sessions.session_id, sessions.agent_name
FROM inputs JOIN sessions USING (session_id) JOIN leases USING (session_id)
WHERE (sessions.agent_name IS NULL OR sessions.agent_name <> ALL(%(specs)s))
  AND (leases.holder IS NULL OR leases.expires_at <= clock_timestamp())
ORDER BY sessions.session_id
LIMIT %(limit)s
"""


@attrs.frozen
class Claimed:
    """What one claim found."""

    #: Sessions now held: id, spec name, fencing token, last sequence number.
    sessions: list[tuple[str, str, int, int]]
    #: Seconds until another holder's earliest lease runs out (None: none held).
    next_expiry: float | None
    #: Sessions with input whose spec no name given knows: (id, spec name).
    unknown: list[tuple[str, str | None]]


def submit(db: Database, info: SessionInfo, data: str, posted_at: float) -> int:
    """Create the session unless it exists (unheld: a released lease row),
    then post the input; one transaction, so durable and notified at once."""
    conn = db.connection
    with db.translated(), conn.transaction():
        conn.execute(
            f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (session_id) DO NOTHING",
            session_row(info),
        )
        conn.execute(
            "INSERT INTO leases VALUES (%s, NULL, 0, clock_timestamp()) ON CONFLICT (session_id) DO NOTHING",
            (info.session_id,),
        )
        try:
            input_id: int
            (input_id,) = one(
                conn.execute(
                    "INSERT INTO inputs (session_id, posted_at, data) VALUES (%s, %s, %s) RETURNING id",
                    (info.session_id, posted_at, data),
                )
            )
        except errors.ForeignKeyViolation:  # deleted meanwhile
            raise SessionNotFound(info.session_id) from None
        conn.execute("SELECT pg_notify(%s, %s)", (db.channels.inputs, info.session_id))
    return input_id


def claim(db: Database, specs: Sequence[str], limit: int, report: int) -> Claimed:
    """Claim at most ``limit`` runnable sessions of ``specs`` (see the
    module); look up when the next lease runs out, and up to ``report``
    sessions with work whose spec is not among ``specs``."""
    conn = db.connection
    params = {"specs": list(specs), "limit": limit, "holder": db.holder, "lease": db.lease_seconds}
    with db.translated():
        with conn.transaction():
            held = conn.execute(_CLAIM, params).fetchall() if limit > 0 else []
            last: dict[str, int] = dict(
                conn.execute(
                    "SELECT session_id, max(seq) FROM records WHERE session_id = ANY(%s) GROUP BY session_id",
                    ([row[0] for row in held],),
                ).fetchall()
            )
        (next_expiry,) = one(conn.execute(_NEXT_EXPIRY, params))
        unknown = conn.execute(_UNKNOWN, {**params, "limit": report}).fetchall() if report else []
    sessions = [(session_id, name, token, last.get(session_id, 0)) for session_id, token, name in held]
    return Claimed(sessions, next_expiry, unknown)


def leave(db: Database, session_id: str, token: int) -> None:
    """A session released with work left (queued input, a turn to continue)
    is made runnable: held again in this store's name with a lease that has
    run out, as if its holder had died, unless another store took it
    meanwhile; the runtimes serving it are woken."""
    conn = db.connection
    with db.translated(), conn.transaction():
        conn.execute(
            "UPDATE leases SET holder = %s, expires_at = clock_timestamp() "
            "WHERE session_id = %s AND token = %s AND (holder IS NULL OR holder = %s)",
            (db.holder, session_id, token, db.holder),
        )
        conn.execute("SELECT pg_notify(%s, %s)", (db.channels.inputs, session_id))
