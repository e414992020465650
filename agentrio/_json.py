"""Reading JSON text: ``msgspec`` first, the standard library where it refuses.

msgspec reads a small object 5-15x faster than ``json.loads`` and gives the
same values for everything both accept (integers of any size exactly,
floats correctly rounded, the last of repeated keys). What it refuses and
``json`` reads (``NaN``, ``Infinity``, a lone surrogate, a number beyond a
float's range, nesting past its depth limit) goes to ``json``, so every
text reads as ``json.loads`` would read it, and fails as it would.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

_decode = msgspec.json.decode


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, faster: raises ``ValueError`` (or
    ``RecursionError``) where it would."""
    try:
        return _decode(text)
    except msgspec.DecodeError:
        return json.loads(text)
