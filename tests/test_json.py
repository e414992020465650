"""``agentrio._json.loads`` reads every text as ``json.loads`` does."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrio._json import loads

_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _same(a, b) -> bool:
    """Equal, with NaN equal to itself and types compared exactly."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


def _assert_read_alike(text: str | bytes) -> None:
    """Both read the same value, or both raise the same kind of error."""
    try:
        expected = json.loads(text)
    except (ValueError, RecursionError) as exc:
        with pytest.raises(type(exc)):
            loads(text)
    else:
        assert _same(loads(text), expected)


@given(_values, st.booleans())
def test_encoded_values_read_back_as_json_reads_them(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)  # NaN, Infinity and lone surrogates included
    _assert_read_alike(text)
    _assert_read_alike(text.encode("utf-8", "surrogatepass"))


@given(st.text(alphabet='{}[]",:0123456789.eE+-tfnulNaIy \\u"x', max_size=40))
def test_arbitrary_text_reads_or_fails_as_json_reads_it(text):
    _assert_read_alike(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',  # the last of repeated keys
        "123456789012345678901234567890",  # beyond 64 bits, exactly
        "1e400",  # beyond a float: infinity
        "0.1",
        '"\\ud800"',  # a lone surrogate
        "[" * 5000 + "]" * 5000,  # deeper than either reads
        "",
        "{} x",
    ],
)
def test_edge_cases_read_as_json_reads_them(text):
    _assert_read_alike(text)
