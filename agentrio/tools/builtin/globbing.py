"""Glob patterns as the coding tools read them: gitignore-style, matched
against paths written with "/" in linear time."""

from __future__ import annotations

from typing import Any

import re2

from ..regex import compile_regex


def glob_regex(glob: str) -> Any:
    """``glob`` compiled to a regular expression for ``fullmatch``: "*" and
    "?" stay within a path component, "**/" spans any number of them, a
    trailing "/**" everything below. Raises ``RegexError`` for a glob whose
    class (``[...]``) cannot be compiled."""
    return compile_regex(_translate(glob))


def _translate(glob: str) -> str:
    """A gitignore-style glob as a regular expression."""
    if glob == "**":
        return ".*"
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            members = glob[i + 1 : end]
            out.append("[" + ("^" + members[1:] if members.startswith("!") else members) + "]")
            i = end + 1
        else:
            out.append(re2.escape(glob[i]))
            i += 1
    return "".join(out)
