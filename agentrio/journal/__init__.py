"""Session journals: records, projections and stores."""

from .journal import Journal
from .projection import JournalCorrupt, SessionState
from .records import QueuedInput, Record
from .store import MemoryStore, SessionExists, SessionInfo, SessionNotFound, Store

__all__ = [
    "Journal",
    "JournalCorrupt",
    "MemoryStore",
    "QueuedInput",
    "Record",
    "SessionExists",
    "SessionInfo",
    "SessionNotFound",
    "SessionState",
    "Store",
]
