"""Errors a model request can end with."""

from __future__ import annotations

import attrs


@attrs.define(auto_exc=True, eq=False)
class ProviderError(Exception):
    """A request failed at the provider (or on the way to it).

    ``status`` is the HTTP status when there was one; ``type`` the provider's
    error type (``rate_limit_error``, ``context_length_exceeded``,
    ``connection_error`` …); ``retry_after`` the delay in seconds the provider
    asked for.
    """

    status: int | None = None
    type: str = "provider_error"
    message: str = ""
    retry_after: float | None = None

    def __str__(self) -> str:
        where = f"HTTP {self.status} " if self.status is not None else ""
        return f"{where}{self.type}: {self.message}"
