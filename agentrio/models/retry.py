"""When a failed model request is worth another attempt, and how long to wait.

The agent loop owns the waiting and the attempts; this module only decides.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import attrs

from .errors import ProviderError
from .provider_errors import CONNECTION_ERROR, TIMEOUT

#: Statuses that say "not now" rather than "never": request timeout,
#: conflict, rate limit; every 5xx (529 is Anthropic's "overloaded") is
#: retried too.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
#: Error types that are transient whatever the status (errors met mid-stream
#: have none).
RETRYABLE_TYPES = frozenset(
    {CONNECTION_ERROR, TIMEOUT, "overloaded_error", "rate_limit_error", "api_error", "server_error"}
)


def is_retryable(error: ProviderError) -> bool:
    if error.status is not None:
        return error.status in RETRYABLE_STATUSES or error.status >= 500
    return error.type in RETRYABLE_TYPES


@attrs.frozen
class RetryPolicy:
    """Exponential back-off with jitter, honouring the provider's
    ``retry-after`` up to ``max_retry_after`` seconds.

    ``max_attempts`` counts every attempt, the first included. ``jitter`` is
    the fraction of each back-off that may be randomly shaved off (0 for
    none, 1 for "full jitter"); ``random`` returns a float in [0, 1) and can
    be replaced to make delays exact in tests.
    """

    max_attempts: int = attrs.field(default=4, validator=attrs.validators.ge(1))
    base_delay: float = attrs.field(default=1.0, validator=attrs.validators.ge(0))
    max_delay: float = attrs.field(default=30.0, validator=attrs.validators.ge(0))
    max_retry_after: float = attrs.field(default=60.0, validator=attrs.validators.ge(0))
    jitter: float = attrs.field(default=0.25, validator=[attrs.validators.ge(0), attrs.validators.le(1)])
    retryable: Callable[[ProviderError], bool] = is_retryable
    random: Callable[[], float] = attrs.field(default=random.random, eq=False, repr=False)

    def delay(self, error: ProviderError, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or ``None`` to give up.
        ``attempt`` is the number of the attempt that just failed, from 1."""
        if attempt >= self.max_attempts or not self.retryable(error):
            return None
        if error.retry_after is not None:
            return min(error.retry_after, self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return backoff * (1 - self.jitter * self.random())
