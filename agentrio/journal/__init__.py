"""Session journals: records, projections and stores."""

from .fork import ForkRefused
from .journal import Journal
from .outcomes import Outcome
from .ownership import Lease, LeaseHeld, LeaseLost
from .projection import JournalCorrupt, SessionState
from .records import Record
from .remote import RemoteInput
from .sqlite import SQLiteStore
from .store import (
    ForeignDatabase,
    LoadedSession,
    MemoryStore,
    SchemaTooNew,
    SessionExists,
    SessionHeld,
    SessionInfo,
    SessionNotFound,
    SessionSummary,
    Store,
    StoreCorrupt,
    StoreError,
    StoreNotFound,
    StoreUnavailable,
)

__all__ = [
    "ForeignDatabase",
    "ForkRefused",
    "Journal",
    "JournalCorrupt",
    "Lease",
    "LeaseHeld",
    "LeaseLost",
    "LoadedSession",
    "MemoryStore",
    "Outcome",
    "PostgresStore",
    "Record",
    "RemoteInput",
    "SQLiteStore",
    "SchemaTooNew",
    "SessionExists",
    "SessionHeld",
    "SessionInfo",
    "SessionNotFound",
    "SessionState",
    "SessionSummary",
    "Store",
    "StoreCorrupt",
    "StoreError",
    "StoreNotFound",
    "StoreUnavailable",
]


def __getattr__(name: str) -> object:
    # Imported on first use: it needs psycopg, an optional dependency.
    if name == "PostgresStore":
        from .postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
