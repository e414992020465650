"""The JSON text of records and snapshots, through the package converter."""

from __future__ import annotations

import json
from typing import Any

import attrs
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
    return json.dumps(data, separators=(",", ":"))


def encode_record(record: Record) -> str:
    """Raises ``TypeError`` for a record JSON cannot hold (say, a tool result
    whose ``details`` is not JSON data)."""
    try:
        return _dumps(converter.unstructure(record))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"a {record.type} record cannot be stored as JSON: {exc}") from exc


def decode_record(text: str) -> Record:
    return converter.structure(json.loads(text), Record)


def decode_message_record(text: str) -> Message:
    """The message of a ``MessageAppended`` record."""
    record = decode_record(text)
    if not isinstance(record, MessageAppended):
        raise ValueError(f"a {record.type} record where a message was expected")
    return record.message


def encode_state(state: SessionState) -> str:
    """``state`` without its committed history, which snapshots take from
    the message records."""
    return _dumps(converter.unstructure(attrs.evolve(state, messages=[])))


def decode_state(text: str, messages: list[Message]) -> SessionState:
    """``messages``: the first ``state.message_records`` messages of the
    session's message records."""
    state = converter.structure(json.loads(text), SessionState)
    summary = [state.summary] if state.summary is not None else []
    state.messages = summary + messages[state.replaced :]
    return state
