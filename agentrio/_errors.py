"""What an error raised through trio's nurseries really is."""

from __future__ import annotations


def sole_error(exc: BaseException) -> BaseException:
    """The one exception a chain of single-exception groups carries (a
    nursery wraps whatever it lets through in a group); ``exc`` itself when
    it is no such chain."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
