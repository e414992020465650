"""The JSON text of records and snapshots, through the package converter.

``orjson`` does the JSON where it can: it is several times faster than the
standard library, which restores and appends pay for on every record. What
orjson refuses and ``json`` round-trips (a lone surrogate in a string, an
integer beyond 64 bits) falls back to ``json`` (and text that may hold such an
integer is read by ``json``, which orjson would read as a float), so nothing that was stored
before becomes unstorable or unreadable. One difference remains: orjson
writes a float NaN or infinity as ``null``.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import orjson
from cattrs.gen import make_dict_unstructure_fn, override

from ..messages import Message, converter
from .projection import SessionState
from .records import MessageAppended, Record

# Sets are not JSON: started calls are written as a sorted list.
converter.register_unstructure_hook(
    SessionState,
    make_dict_unstructure_fn(SessionState, converter, started_calls=override(unstruct_hook=sorted)),
)


def _dumps(data: Any) -> str:
    try:
        return orjson.dumps(data).decode()
    except TypeError:
        return json.dumps(data, separators=(",", ":"))


#: A number of 19 digits or more may lie beyond 64 bits, which orjson would
#: read back as a float: such text is read by ``json``, exactly.
_LONG_NUMBER = re.compile(r"\d{19}")
_LONG_NUMBER_BYTES = re.compile(rb"\d{19}")


def _loads(text: str | bytes) -> Any:
    long_number = _LONG_NUMBER_BYTES if isinstance(text, bytes) else _LONG_NUMBER
    if long_number.search(text) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def encode_record(record: Record) -> str:
    """Raises ``TypeError`` for a record JSON cannot hold (say, a tool result
    whose ``details`` is not JSON data)."""
    try:
        return _dumps(converter.unstructure(record))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"a {record.type} record cannot be stored as JSON: {exc}") from exc


def decode_record(text: str | bytes) -> Record:
    return converter.structure(_loads(text), Record)


def decode_message_record(text: str | bytes) -> Message:
    """The message of a ``MessageAppended`` record, without building the
    record around it."""
    data = _loads(text)
    kind = data.get("type") if isinstance(data, dict) else None
    if kind != MessageAppended.type or "message" not in data:
        raise ValueError(f"a {kind or 'malformed'} record where a message was expected")
    return converter.structure(data["message"], Message)


@contextmanager
def many_objects() -> Iterator[None]:
    """Around decoding a whole journal: the garbage collector waits until
    the end. Decoding builds objects and frees none, so collections during
    it find nothing and cost a quarter of a restore; a collector already
    off (by the application or by another decoding thread) is left off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def encode_state(state: SessionState) -> str:
    """``state`` without its committed history, which snapshots take from
    the message records."""
    return _dumps(converter.unstructure(attrs.evolve(state, messages=[])))


def decode_state(text: str | bytes, messages: list[Message]) -> SessionState:
    """``messages``: the first ``state.message_records`` messages of the
    session's message records."""
    state = converter.structure(_loads(text), SessionState)
    summary = [state.summary] if state.summary is not None else []
    state.messages = summary + messages[state.replaced :]
    return state
