"""Statements run straight on the connection's libpq (``psycopg.pq``), for
the store's hot path, the commit: each prepared once on a connection, then
sent with parameters this module writes as text. ``Connection.execute``
adapts each parameter through psycopg's dumpers and drives the exchange
through generators, which costs the client several times the commit's own
work; here it is a send, a wait on the socket and a read, waited for in the
store's thread or in the trio thread itself."""

from __future__ import annotations

import select
from collections import OrderedDict
from collections.abc import Generator, Sequence

import psycopg
import trio
from psycopg import pq

from ..rows import RecordRow

#: A parameter as the store sends it (a list: a one-dimensional array;
#: bytes: already in PostgreSQL's text format, see ``record_texts``).
Param = bytes | str | int | float | None | list[str] | list[int] | list[float]

#: Prepared statements kept on a connection; the least recently used one
#: beyond this is deallocated.
PREPARED_MAX = 64


#: What an exchange waits for next: the socket to take more of the query,
#: or to have more of the answer.
WRITE, READ = select.POLLOUT, select.POLLIN
#: An exchange with the server: yields what it waits for, returns its rows.
Exchange = Generator[int, None, list[tuple[str | None, ...]]]


class Statements:
    """The statements prepared on one connection (make a new one for a new
    connection). Statement texts use psycopg's ``%s`` placeholders. One
    exchange at a time, between psycopg's own statements, never inside a
    psycopg transaction block or pipeline: ``rows`` blocks its thread (not
    holding the GIL while it waits), ``rows_here`` waits in trio."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn
        self._encoding = conn.info.encoding
        #: Statement text -> its name on the connection, least recent first.
        self._names: OrderedDict[str, bytes] = OrderedDict()
        self._made = 0

    def record_texts(self, rows: Sequence[RecordRow]) -> list[bytes]:
        """The values of record rows, in order, as parameters: one
        expression a row, not a call a value, on the commit's path."""
        encoding = self._encoding
        texts: list[bytes] = []
        for session_id, seq, kind, written_at, data, checksum in rows:
            texts += (
                session_id.encode(encoding),
                b"%d" % seq,
                kind.encode(encoding),
                b"%r" % written_at,
                data.encode(encoding),
                b"%d" % checksum,
            )
        return texts

    def rows(self, statement: str, params: Sequence[Param]) -> list[tuple[str | None, ...]]:
        """Run ``statement`` (preparing it first if this connection has not
        yet) and return its rows, each column as text. Raises psycopg's
        errors: ``OperationalError`` for a lost connection, the error class
        of the server's SQLSTATE for a refused statement."""
        exchange = self._run(statement, params)
        poller = select.poll()
        fd = self._conn.pgconn.socket
        poller.register(fd, WRITE)
        try:
            while True:
                poller.modify(fd, next(exchange))
                poller.poll()
        except StopIteration as done:
            rows: list[tuple[str | None, ...]] = done.value
            return rows

    async def rows_here(self, statement: str, params: Sequence[Param]) -> list[tuple[str | None, ...]]:
        """``rows``, waiting in the trio thread."""
        exchange = self._run(statement, params)
        fd = self._conn.pgconn.socket
        try:
            while True:
                if next(exchange) == READ:
                    await trio.lowlevel.wait_readable(fd)
                else:
                    await trio.lowlevel.wait_writable(fd)
        except StopIteration as done:
            rows: list[tuple[str | None, ...]] = done.value
            return rows

    def _run(self, statement: str, params: Sequence[Param]) -> Exchange:
        pgconn, encoding = self._conn.pgconn, self._encoding
        name = self._names.get(statement)
        if name is None:
            if len(self._names) >= PREPARED_MAX:
                _, old = self._names.popitem(last=False)
                pgconn.send_query_params(b"DEALLOCATE " + old, None)
                yield from self._result()
            name = b"agentrio_%d" % self._made
            self._made += 1
            parts = statement.split("%s")
            text = "".join(part + f"${i}" for i, part in enumerate(parts[:-1], 1)) + parts[-1]
            pgconn.send_prepare(name, text.encode(encoding))
            yield from self._result()
            self._names[statement] = name
        else:
            self._names.move_to_end(statement)
        pgconn.send_query_prepared(name, [p if type(p) is bytes else _text(p, encoding) for p in params])
        result = yield from self._result()
        return [
            tuple(
                None if (value := result.get_value(row, column)) is None else value.decode(encoding)
                for column in range(result.nfields)
            )
            for row in range(result.ntuples)
        ]

    def _result(self) -> Generator[int, None, pq.abc.PGresult]:
        """The result of the statement sent, once every result of it is in
        (the connection is then ready for the next)."""
        pgconn = self._conn.pgconn
        while pgconn.flush():
            yield WRITE
        results: list[pq.abc.PGresult] = []
        while True:
            pgconn.consume_input()
            while not pgconn.is_busy():
                result = pgconn.get_result()
                if result is None:
                    return _checked(results, self._encoding)
                results.append(result)
            yield READ


_OK = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK)


def _checked(results: list[pq.abc.PGresult], encoding: str) -> pq.abc.PGresult:
    for result in results:
        if result.status not in _OK:
            raise psycopg.errors.error_from_result(result, encoding=encoding)
    if not results:
        raise psycopg.OperationalError("the server sent no result")
    return results[-1]


def _text(value: Param, encoding: str) -> bytes | None:
    """A parameter in PostgreSQL's text format (typed by the statement's casts)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode(encoding)
    if isinstance(value, int):
        return b"%d" % value
    if isinstance(value, float):
        return repr(value).encode()
    if value is None:
        return None
    return ("{" + ",".join(_element(v) for v in value) + "}").encode(encoding)


def _element(value: str | float) -> str:
    if not isinstance(value, str):
        return str(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
