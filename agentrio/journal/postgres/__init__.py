"""The PostgreSQL store: its schema, its blocking database half and its trio
half. Needs psycopg 3 (``pip install 'agentrio[postgres]'``)."""

try:
    import psycopg  # noqa: F401
except ImportError as exc:
    raise ImportError(
        "PostgresStore needs psycopg 3: pip install 'agentrio[postgres]'", name=exc.name
    ) from exc

from .store import PostgresStore

__all__ = ["PostgresStore"]
