"""Session journals: records, projections and stores."""

from .fork import ForkRefused
from .journal import Journal
from .projection import JournalCorrupt, SessionState
from .records import Record
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
)

__all__ = [
    "ForeignDatabase",
    "ForkRefused",
    "Journal",
    "JournalCorrupt",
    "LoadedSession",
    "MemoryStore",
    "Record",
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
]
