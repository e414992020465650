"""The HTTP client model adapters share.

A Runtime enters ``open_http_client()`` once; every adapter running inside it
then reuses one connection pool through ``shared_http_client``. The client
itself is made on first use: creating one loads TLS certificates, which an
agent that never calls a remote model should not pay for.
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


class SharedClient:
    """An ``httpx.AsyncClient`` created on first use and closed by its owner."""

    def __init__(self, *, timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT, **limits: Any) -> None:
        self._timeout = timeout
        self._limits = httpx.Limits(**limits)
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout, limits=self._limits)
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
    e.g. ``max_connections=20``) in ``shared_http_client`` for the duration
    of the block, and close it on exit."""
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
