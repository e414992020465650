"""Faults a test turns on and off in a store's database: commits that fail
(an SQLite disk that refuses writes, a PostgreSQL trigger that raises)."""

from __future__ import annotations

import sqlite3

import attrs
import pytest

from agentrio.journal.sqlite.database import Database

from .places import Place

_PG_FAULT = """
CREATE OR REPLACE FUNCTION agentrio.injected_fault() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'injected fault: the disk refuses writes'; END $$;
CREATE TRIGGER injected_fault BEFORE INSERT ON agentrio.records
FOR EACH STATEMENT EXECUTE FUNCTION agentrio.injected_fault();
"""


@attrs.define
class FailingCommits:
    """``on()``: every commit of records fails until ``off()``."""

    place: Place
    monkeypatch: pytest.MonkeyPatch
    failing: bool = False

    def on(self) -> None:
        self.failing = True
        if self.place.kind == "postgres":
            self.place.execute(_PG_FAULT)
            return
        write, try_write = Database.write, Database.try_write

        def failing_write(db, batch):
            if self.failing:
                raise sqlite3.OperationalError("disk I/O error (injected)")
            return write(db, batch)

        def failing_try_write(db, batch):
            if self.failing:
                raise sqlite3.OperationalError("disk I/O error (injected)")
            return try_write(db, batch)

        self.monkeypatch.setattr(Database, "write", _translated(failing_write))
        self.monkeypatch.setattr(Database, "try_write", _translated(failing_try_write))

    def off(self) -> None:
        self.failing = False
        if self.place.kind == "postgres":
            self.place.execute("DROP TRIGGER injected_fault ON agentrio.records")


def _translated(fn):
    from agentrio.journal.sqlite.connection import store_error

    def call(db, batch):
        try:
            return fn(db, batch)
        except sqlite3.OperationalError as exc:
            raise store_error(db.path, exc) from exc

    return call
