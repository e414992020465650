"""The SQLite store: its schema, its blocking database half and its trio half."""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]
