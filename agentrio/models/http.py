"""The HTTP client model adapters share.

A Runtime enters ``open_http_client()`` once; every adapter running inside it
then reuses that client's connection pool through ``shared_http_client``.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

#: Model calls wait long for a first byte (a reasoning model may think for
#: minutes) but should notice quickly that a server cannot be reached.
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)

shared_http_client: contextvars.ContextVar[httpx.AsyncClient | None] = contextvars.ContextVar(
    "agentrio_shared_http_client", default=None
)


@asynccontextmanager
async def open_http_client(
    *, timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT, **limits: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """Create the shared client (``limits`` are ``httpx.Limits`` arguments,
    e.g. ``max_connections=20``), publish it in ``shared_http_client`` for
    the duration of the block, and close it on exit."""
    async with httpx.AsyncClient(timeout=timeout, limits=httpx.Limits(**limits)) as client:
        token = shared_http_client.set(client)
        try:
            yield client
        finally:
            shared_http_client.reset(token)


@asynccontextmanager
async def client_for_request(explicit: httpx.AsyncClient | None) -> AsyncIterator[httpx.AsyncClient]:
    """The client one request should use: ``explicit`` if given, else the
    shared one, else a temporary client closed when the request is done."""
    client = explicit or shared_http_client.get()
    if client is not None:
        yield client
        return
    async with httpx.AsyncClient(timeout=DEFAULT_TIMEOUT) as temporary:
        yield temporary
