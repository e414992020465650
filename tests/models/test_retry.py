"""The default retry policy: what is retried, how long to wait, when to stop."""

from __future__ import annotations

import pytest

from agentrio.models import ProviderError, RetryPolicy
from agentrio.models.retry import is_retryable

NO_JITTER = RetryPolicy(jitter=0)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_transient_statuses_are_retried(status):
    assert is_retryable(ProviderError(status, "x"))


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_never_retried(status):
    assert not is_retryable(ProviderError(status, "rate_limit_error"))
    assert NO_JITTER.delay(ProviderError(status, "x"), 1) is None


@pytest.mark.parametrize(
    "kind", ["connection_error", "overloaded_error", "rate_limit_error", "api_error", "server_error"]
)
def test_transient_errors_without_status_are_retried(kind):
    assert is_retryable(ProviderError(None, kind))


@pytest.mark.parametrize("kind", ["invalid_request_error", "context_overflow", "invalid_response"])
def test_other_errors_without_status_are_not_retried(kind):
    assert not is_retryable(ProviderError(None, kind))


def test_context_overflow_with_status_400_is_not_retried():
    assert NO_JITTER.delay(ProviderError(400, "context_overflow"), 1) is None


def test_backoff_doubles_and_is_capped():
    policy = RetryPolicy(max_attempts=10, base_delay=1.0, max_delay=5.0, jitter=0)
    error = ProviderError(None, "connection_error")
    assert [policy.delay(error, n) for n in range(1, 11)] == [1, 2, 4, 5, 5, 5, 5, 5, 5, None]


def test_gives_up_after_max_attempts():
    policy = RetryPolicy(max_attempts=3, jitter=0)
    error = ProviderError(503, "server_error")
    assert policy.delay(error, 2) is not None
    assert policy.delay(error, 3) is None
    assert RetryPolicy(max_attempts=1).delay(error, 1) is None


def test_jitter_shaves_a_random_fraction_of_the_backoff():
    draws = iter([0.0, 0.5, 0.999])
    policy = RetryPolicy(base_delay=2.0, jitter=0.5, random=lambda: next(draws))
    error = ProviderError(429, "rate_limit_error")
    assert policy.delay(error, 1) == 2.0
    assert policy.delay(error, 1) == 1.5
    assert policy.delay(error, 1) == pytest.approx(2.0 * (1 - 0.5 * 0.999))


def test_retry_after_is_honoured_without_jitter_and_capped():
    policy = RetryPolicy(max_retry_after=20.0, random=lambda: 0.9)
    assert policy.delay(ProviderError(429, "x", retry_after=7.0), 1) == 7.0
    assert policy.delay(ProviderError(429, "x", retry_after=3600.0), 1) == 20.0
    # retry-after does not make an error retryable
    assert policy.delay(ProviderError(400, "x", retry_after=1.0), 1) is None


def test_the_retryable_predicate_can_be_replaced():
    policy = RetryPolicy(jitter=0, retryable=lambda e: e.type == "tool_use_failed")
    assert policy.delay(ProviderError(400, "tool_use_failed"), 1) == 1.0
    assert policy.delay(ProviderError(503, "server_error"), 1) is None


def test_invalid_settings_are_rejected():
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(jitter=1.5)
