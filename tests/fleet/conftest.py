from __future__ import annotations

import pytest


@pytest.fixture
def dsn(postgres) -> str:
    """A new, empty database, dropped after the test."""
    dsn = postgres.new_database()
    yield dsn
    postgres.drop_database(dsn)
