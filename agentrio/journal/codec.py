"""The JSON text of records and snapshots, through the package converter.

``msgspec`` writes the records every turn writes, through mirrors of
their classes (``messages.wire``), and ``orjson`` the rest: both are
several times faster than the standard library. What they refuse and
``json`` round-trips (a lone surrogate in a string; for orjson, an integer
beyond 64 bits) falls back to ``json``, so nothing becomes unstorable. One
difference remains: they write a float NaN or infinity as ``null``.

``msgspec`` reads it: it reads integers of any size exactly (orjson would
read one beyond 64 bits as a float) and, for message records, checks the
shape in the same pass (``messages.wire``). What msgspec refuses (a lone
surrogate, a number out of a float's range, a record of another shape)
goes the general way, ``json`` and the converter, so everything that was
readable stays readable, with the same result.
"""

from __future__ import annotations

import gc
import json
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import attrs
import msgspec
import orjson
from cattrs.gen import make_dict_unstructure_fn, override

from .._json import loads
from ..mailbox import InboxSpliced
from ..messages import Message, converter
from ..messages.wire import MessageShape, Mirror, shape
from .projection import SessionState
from .records import (
    ActorFailed,
    MessageAppended,
    Record,
    StateEntered,
    StepEnded,
    StepStarted,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)

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


class _MessageRecord(Mirror, tag_field="type", tag=MessageAppended.type):
    message: MessageShape


_message_record = msgspec.json.Decoder(_MessageRecord)
_encoder = msgspec.json.Encoder()


def _fast_message(text: str | bytes) -> Message | None:
    """The message of a message record in the shape ``encode_record``
    writes, or None for any other text (see ``messages.wire``)."""
    try:
        return _message_record.decode(text).message.build()
    except (msgspec.DecodeError, TypeError, ValueError):
        return None


class _QueuedInput(Mirror):
    id: str
    message: MessageShape


class _InboxSpliced(Mirror, tag_field="type", tag=InboxSpliced.type):
    target: str
    start: int
    delete_count: int
    items: list[_QueuedInput]
    reason: str


def _flat_mirror(cls: type[Record]) -> tuple[Callable[..., Mirror], Callable[[Any], Any], bool]:
    """The mirror of a record whose fields are all JSON scalars, what takes
    their values from a record, and whether that gives several."""
    names = [field.name for field in attrs.fields(cls)]
    mirror = msgspec.defstruct(f"_{cls.__name__}", names, bases=(Mirror,), tag_field="type", tag=cls.type)
    return cast("Callable[..., Mirror]", mirror), operator.attrgetter(*names), len(names) > 1


#: The records every turn writes whose fields are JSON scalars: their
#: mirrors write them as the converter does, in a third of the time.
_FLAT: dict[type[Record], tuple[Callable[..., Mirror], Callable[[Any], Any], bool]] = {
    cls: _flat_mirror(cls)
    for cls in (TurnStarted, StepStarted, ToolCallStarted, StepEnded, TurnEnded, ActorFailed, StateEntered)
}


def encode_record(record: Record) -> str:
    """Raises ``TypeError`` for a record JSON cannot hold (say, a tool result
    whose ``details`` is not JSON data).

    The records a turn writes go through msgspec mirrors (``messages.wire``),
    which write the JSON the converter would, tag first; what they refuse
    goes the converter's way."""
    flat = _FLAT.get(type(record))
    try:
        if flat is not None:
            mirror, values, several = flat
            return _encoder.encode(mirror(*values(record)) if several else mirror(values(record))).decode()
        if type(record) is MessageAppended:
            return _encoder.encode(_MessageRecord(shape(record.message))).decode()
        if type(record) is InboxSpliced:
            items = [_QueuedInput(item.id, shape(item.message)) for item in record.items]
            spliced = _InboxSpliced(record.target, record.start, record.delete_count, items, record.reason)
            return _encoder.encode(spliced).decode()
    except (TypeError, ValueError, msgspec.EncodeError):
        pass  # a lone surrogate, or a value past the classes' checks: below
    try:
        return _dumps(converter.unstructure(record))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"a {record.type} record cannot be stored as JSON: {exc}") from exc


#: How every message record written starts (its tag comes first, on either
#: path of ``encode_record``): other records skip the fast path, which
#: would only fail on them.
_MESSAGE_TAG = f'{{"type":"{MessageAppended.type}"'
_MESSAGE_TAG_BYTES = _MESSAGE_TAG.encode()


#: The unions as the converter takes them (mypy's ``type[T]`` holds one class).
_RECORD: Any = Record
_MESSAGE: Any = Message


def decode_record(text: str | bytes) -> Record:
    if text.startswith(_MESSAGE_TAG_BYTES if type(text) is bytes else _MESSAGE_TAG):  # type: ignore[arg-type]
        message = _fast_message(text)
        if message is not None:
            return MessageAppended(message)
    record: Record = converter.structure(loads(text), _RECORD)
    return record


def decode_message_record(text: str | bytes) -> Message:
    """The message of a ``MessageAppended`` record, without building the
    record around it."""
    message = _fast_message(text)
    if message is not None:
        return message
    data = loads(text)
    kind = data.get("type") if isinstance(data, dict) else None
    if kind != MessageAppended.type or "message" not in data:
        raise ValueError(f"a {kind or 'malformed'} record where a message was expected")
    message_: Message = converter.structure(data["message"], _MESSAGE)
    return message_


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


def decode_state(text: str | bytes) -> SessionState:
    """The state ``encode_state`` wrote, still without its history: see
    ``with_history``."""
    return converter.structure(loads(text), SessionState)


def with_history(state: SessionState, kept: list[Message]) -> SessionState:
    """``state`` given its history: ``kept`` are the session's message
    records after the first ``state.replaced`` (those a compaction summed
    up), up to the snapshot."""
    if state.rolled_back:  # less those a rollback took back
        kept = [kept[offset] for offset in state.kept_records(state.replaced, len(kept))]
    state.messages = [state.summary, *kept] if state.summary is not None else kept
    return state
