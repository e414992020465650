"""The HTTP client model adapters share.

A Runtime enters ``open_http_client()`` once; every adapter running inside it
then reuses one connection pool through ``shared_http_client``. The client
itself is made on first use: creating one loads TLS certificates, which an
agent that never calls a remote model should not pay for.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

#: Model calls wait long for a first byte (a reasoning model may think for
#: minutes) but should notice quickly that a server cannot be reached.
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)

#: The shared client's pool: no cap on connections, so that no agent's
#: stream waits for another's to end, and at most 20 idle ones kept. The
#: bound matters at scale: httpcore looks at every connection of the pool
#: each time a request starts or ends, and counts the whole pool for each
#: idle one, so a pool that kept all of 1,000 finished streams' connections
#: would cost each request a million checks.
DEFAULT_LIMITS: Mapping[str, int | None] = {"max_connections": None, "max_keepalive_connections": 20}


def client_limits(**limits: Any) -> httpx.Limits:
    """``DEFAULT_LIMITS``, each replaced by its ``limits`` argument if given."""
    return httpx.Limits(**{**DEFAULT_LIMITS, **limits})


def new_client(
    *, timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT, limits: httpx.Limits | None = None
) -> httpx.AsyncClient:
    """A client made as the shared one is (``client_limits()`` by default)."""
    return httpx.AsyncClient(timeout=timeout, limits=limits or client_limits())


class SharedClient:
    """An ``httpx.AsyncClient`` created on first use and closed by its owner."""

    def __init__(self, *, timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT, **limits: Any) -> None:
        self._timeout = timeout
        self._limits = client_limits(**limits)
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = new_client(timeout=self._timeout, limits=self._limits)
        return self._client

    @property
    def created(self) -> bool:
        return self._client is not None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


shared_http_client: contextvars.ContextVar[SharedClient | None] = contextvars.ContextVar(
    "agentrio_shared_http_client", default=None
)


@asynccontextmanager
async def open_http_client(
    *, timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT, **limits: Any
) -> AsyncIterator[SharedClient]:
    """Publish a shared client (``limits`` are ``httpx.Limits`` arguments,
    e.g. ``max_connections=20``, each replacing that of ``DEFAULT_LIMITS``)
    in ``shared_http_client`` for the duration of the block, and close it
    on exit."""
    shared = SharedClient(timeout=timeout, **limits)
    token = shared_http_client.set(shared)
    try:
        yield shared
    finally:
        shared_http_client.reset(token)
        await shared.aclose()


@asynccontextmanager
async def client_for_request(explicit: httpx.AsyncClient | None) -> AsyncIterator[httpx.AsyncClient]:
    """The client one request should use: ``explicit`` if given, else the
    shared one, else a temporary client closed when the request is done."""
    shared = shared_http_client.get()
    if explicit is not None:
        yield explicit
        return
    if shared is not None:
        yield shared.client
        return
    async with httpx.AsyncClient(timeout=DEFAULT_TIMEOUT) as temporary:
        yield temporary
