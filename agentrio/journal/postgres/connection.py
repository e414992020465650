"""Connections as the store makes them: bounded waits everywhere (connect
timeout, TCP keepalives, a statement timeout), errors told as store errors,
and the DSN's secrets kept out of every message."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

import psycopg

from ..store import StoreError, StoreUnavailable


def one(cursor: psycopg.Cursor[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The row of a statement that always returns one (an aggregate, an
    INSERT ... RETURNING)."""
    row = cursor.fetchone()
    assert row is not None
    return row


#: The DSN parameters never shown (libpq's names).
_SECRETS = ("password", "sslpassword", "sslkey")
_KEY_VALUE_SECRET = re.compile(
    r"\b(" + "|".join(_SECRETS) + r")\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE
)
#: The password in a URI: ``scheme://user:password@host``.
_URI_SECRET = re.compile(r"(\w+://[^:/@\s]*:)([^@\s]*)(@)")


def redacted(text: str, dsn: str) -> str:
    """``text`` (an error message, a DSN) without the secrets of ``dsn``,
    whether or not libpq could parse it."""
    text = _URI_SECRET.sub(r"\1***\3", _KEY_VALUE_SECRET.sub(r"\1=***", text))
    for secret in _secrets(dsn):
        text = text.replace(secret, "***")
    return text


def _secrets(dsn: str) -> list[str]:
    found = [m.group(2).strip("'") for m in _KEY_VALUE_SECRET.finditer(dsn)]
    found += [part for m in _URI_SECRET.finditer(dsn) for part in (m.group(2), unquote(m.group(2)))]
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        params = {}
    found += [str(params[key]) for key in _SECRETS if params.get(key)]
    # Longest first, so that no part of a secret is left behind; too short
    # a "secret" would blank ordinary words.
    return sorted({s for s in found if len(s) >= 3 and s != "***"}, key=len, reverse=True)


def describe(dsn: str) -> str:
    """Names the database in errors: never a secret."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise StoreError(
            f"not a PostgreSQL connection string: {redacted(dsn, dsn)}: {redacted(str(exc).strip(), dsn)}"
        ) from None
    host = params.get("host", "localhost")
    port = f":{params['port']}" if "port" in params else ""
    return f"postgresql {params.get('dbname', params.get('user', ''))} on {host}{port}"


def connect(dsn: str, lease_seconds: float, where: str) -> psycopg.Connection:
    """An autocommit connection whose every wait is bounded by about a lease:
    connecting, a silent peer (TCP keepalives, unacknowledged data) and a
    statement (``statement_timeout``, set by ``bound_statements``), so that
    a partition is found within the lease."""
    third = max(1, int(lease_seconds / 3))
    try:
        return psycopg.connect(
            dsn,
            autocommit=True,
            connect_timeout=max(2, third),
            keepalives=1,
            keepalives_idle=third,
            keepalives_interval=1,
            keepalives_count=3,
            tcp_user_timeout=max(1000, round(lease_seconds * 1000)),
        )
    except psycopg.Error as exc:
        raise unavailable(exc, where, dsn) from None


def bound_statements(conn: psycopg.Connection, lease_seconds: float) -> None:
    """A statement, or a transaction left open (a process paused inside a
    commit holds its sessions' lease rows, which would block their
    takeover), ends after a lease."""
    limit = f"{max(1000, round(lease_seconds * 1000))}ms"
    conn.execute(
        "SELECT set_config('statement_timeout', %s, false), "
        "set_config('idle_in_transaction_session_timeout', %s, false)",
        (limit, limit),
    )


def lost(exc: psycopg.Error, conn: psycopg.Connection | None) -> bool:
    """Whether ``exc`` says the database cannot be reached (rather than that
    a statement is wrong): worth retrying on a new connection."""
    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) or (
        conn is not None and (conn.closed or conn.broken)
    )


def unavailable(exc: psycopg.Error, where: str, dsn: str) -> StoreUnavailable:
    return StoreUnavailable(f"{where}: {redacted(str(exc), dsn)}")
