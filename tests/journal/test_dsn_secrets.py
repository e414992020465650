"""A DSN's password never shows: not in errors, nor in ``repr``, nor in
``store.dsn``, nor in the log."""

from __future__ import annotations

import logging

import pytest

from agentrio.journal import PostgresStore, StoreError
from agentrio.journal.postgres.connection import redacted

SECRET = "s3cr%t-pa55"

DSNS = [
    f"postgresql://agent:{SECRET}@127.0.0.1:1/agents",  # a raw % libpq refuses to parse
    "postgresql://agent:s3cr%25t-pa55@127.0.0.1:1/agents",  # the same, percent-encoded
    f"host=127.0.0.1 port=1 user=agent password={SECRET} dbname=agents",
    f"host=127.0.0.1 port=1 user=agent password='{SECRET}' dbname=agents",
]


@pytest.mark.parametrize("dsn", DSNS)
async def test_a_password_never_shows(dsn, caplog):
    caplog.set_level(logging.DEBUG)
    store = PostgresStore(dsn)
    with pytest.raises(StoreError) as raised:
        async with store:
            pass
    shown = [str(raised.value), repr(raised.value.__cause__), repr(store), store.dsn, caplog.text]
    for text in shown:
        assert SECRET not in text and "s3cr%25t" not in text and "s3cr" not in text, text
    assert "127.0.0.1" in str(raised.value)  # still says which database


def test_redaction_keeps_the_rest():
    assert redacted("postgresql://agent:pw123@db/x", "postgresql://agent:pw123@db/x") == (
        "postgresql://agent:***@db/x"
    )
    assert redacted("host=db password=pw123 dbname=x", "host=db password=pw123 dbname=x") == (
        "host=db password=*** dbname=x"
    )
