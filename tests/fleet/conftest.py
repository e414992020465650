from __future__ import annotations

from ..journal.conftest import dsn

__all__ = ["dsn"]
