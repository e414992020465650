"""Regular expressions that a model or a tool author supplies, matched in
time linear in the text.

Such a pattern is hostile input: Python's ``re`` backtracks, and ``(a+)+$``
against forty "a" and a "!" runs for hours while holding the GIL, freezing
every task. These patterns go through RE2 (``google-re2``) instead, whose
matching time is linear and whose memory per pattern is capped. A pattern
RE2 refuses (a backreference, look-around, a pattern too large) raises a
``RegexError`` that says why.
"""

from __future__ import annotations

import functools
from typing import Any

import re2


class RegexError(ValueError):
    """A pattern the linear-time engine cannot run."""


#: The memory one compiled pattern may use (its program and the states it
#: caches while matching), and how many compiled patterns are kept: at most
#: 128 MB, whatever patterns a model sends.
_MAX_MEMORY = 4 << 20
_CACHED = 32


@functools.lru_cache(maxsize=_CACHED)
def compile_regex(pattern: str, *, ignore_case: bool = False) -> Any:
    """``pattern`` compiled by RE2; the result has ``search``, ``match`` and
    ``fullmatch`` as in ``re``. A pattern whose program needs more than its
    memory budget is refused ("pattern too large")."""
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    options.max_mem = _MAX_MEMORY
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        reason = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise RegexError(
            f"invalid regular expression {pattern!r}: {reason} (patterns run in linear time: "
            "backreferences, look-around and repetition counts above 1000 are not supported)"
        ) from None
