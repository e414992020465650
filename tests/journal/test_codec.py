"""How records are written and read back: the fast paths for messages as
the package writes them agree with the converter, and refuse what it
refuses."""

from __future__ import annotations

import gc
import json
import sqlite3
import typing

import attrs
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrio import SQLiteStore
from agentrio.journal import SessionInfo, SessionState, StoreCorrupt
from agentrio.journal.checksum import record_checksum, text_checksum
from agentrio.journal.codec import (
    _FLAT,
    _MESSAGE_TAG,
    _dumps,
    _fast_message,
    _message_record,
    _MessageRecord,
    decode_message_record,
    decode_record,
    encode_record,
)
from agentrio.journal.records import (
    ActorFailed,
    Compacted,
    MessageAppended,
    StepEnded,
    StepStarted,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from agentrio.mailbox import TARGETS, InboxSpliced, QueuedInput, SpliceReason
from agentrio.messages import (
    AssistantMessage,
    Document,
    Image,
    Message,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    converter,
    is_str_or_parts,
    media,
)
from agentrio.messages import messages as message_classes
from agentrio.messages import usage as usage_module
from agentrio.messages.checks import (
    MAX_JSON_DEPTH,
    is_bool,
    is_count,
    is_json_object,
    is_optional_str,
    is_str,
    json_data,
)
from agentrio.messages.wire import MIRRORS

from ..strategies import messages, texts, user_messages

_details = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_results = st.builds(ToolResultMessage, st.text(), st.text(), st.lists(texts, max_size=2), details=_details)


def test_each_mirror_has_exactly_the_fields_of_its_class_in_order():
    for cls, mirror in MIRRORS.items():
        assert [f.name for f in msgspec.structs.fields(mirror)] == [f.name for f in attrs.fields(cls)], cls


def test_every_mirror_refuses_unknown_fields_and_stays_out_of_the_collector():
    for mirror in [*MIRRORS.values(), _MessageRecord]:
        config = mirror.__struct_config__
        assert config.forbid_unknown_fields and not config.gc, mirror
    record = _message_record.decode(encode_record(MessageAppended(UserMessage([Text("hi")]))))
    assert not gc.is_tracked(record) and not gc.is_tracked(record.message.content[0])


_content = message_classes._is_content
#: Each field's validator and converter, which ``messages.wire`` stands in
#: for when it fills the slots of what it reads: a check added to a class
#: fails here until the wire's builders make it too.
_CHECKS_THE_WIRE_MAKES = {
    Text: {"text": (is_str, None)},
    Thinking: {
        "text": (is_str, None),
        "signature": (is_optional_str, None),
        "redacted": (is_bool, None),
        "id": (is_optional_str, None),
    },
    ToolCall: {
        "id": (is_str, None),
        "name": (is_str, None),
        "arguments": (is_json_object, None),
        "raw_arguments": (is_optional_str, None),
    },
    # Built through their classes, whose checks (these and the ones after
    # init: type, size, magic bytes) run in full.
    Image: {"data": (media._is_bytes, None), "media_type": (media._is_media_type, None)},
    Document: {
        "data": (media._is_bytes, None),
        "media_type": (media._is_media_type, None),
        "name": (is_optional_str, None),
    },
    Usage: {
        **{name: (is_count, None) for name in attrs.fields_dict(Usage) if name != "cost"},
        "cost": (usage_module.is_cost, None),
    },
    UserMessage: {"content": (is_str_or_parts, None)},
    AssistantMessage: {
        "content": (_content, None),
        "stop_reason": (message_classes._is_stop_reason, None),
        "usage": (message_classes._is_usage, None),
        "model": (is_str, None),
        "provider": (is_str, None),
        "error": (is_optional_str, None),
    },
    ToolResultMessage: {
        "tool_call_id": (is_str, None),
        "tool_name": (is_str, None),
        "content": (message_classes._is_result_content, None),
        "is_error": (is_bool, None),
        "details": (None, json_data),
        "error_code": (is_optional_str, None),
    },
}


def test_the_wire_stands_in_for_every_check_of_the_classes_it_builds():
    assert set(_CHECKS_THE_WIRE_MAKES) == set(MIRRORS)
    for cls, checks in _CHECKS_THE_WIRE_MAKES.items():
        assert {f.name: (f.validator, f.converter) for f in attrs.fields(cls)} == checks, cls


@settings(max_examples=300, deadline=None)
@given(messages | _results)
def test_a_message_the_package_wrote_takes_the_fast_path_and_reads_back_exactly(message):
    text = encode_record(MessageAppended(message))
    assert text.startswith(_MESSAGE_TAG)  # what decode_record looks for
    assert json.loads(text) == converter.unstructure(MessageAppended(message))
    assert _fast_message(text.encode()) == message
    assert decode_record(text) == MessageAppended(message)
    assert decode_message_record(text) == converter.structure(json.loads(text)["message"], Message)


#: Any text, and text of what JSON escapes, a lone surrogate among it.
_strings = st.text() | st.text(st.sampled_from('a\u00e9"\\\n\U0001f600\ud800'))
_turn_records = st.one_of(
    st.builds(TurnStarted, st.integers()),
    st.builds(StepStarted, st.integers()),
    st.builds(ToolCallStarted, _strings),
    st.builds(StepEnded, st.integers()),
    st.builds(TurnEnded, st.integers(), _strings, st.none() | _strings),
    st.builds(ActorFailed, _strings, st.booleans()),
    st.builds(
        InboxSpliced,
        st.sampled_from(TARGETS),
        st.integers(min_value=0),
        st.integers(min_value=0),
        st.lists(st.builds(QueuedInput, _strings, user_messages), max_size=3),
        st.sampled_from(typing.get_args(SpliceReason)),
    ),
)


def test_the_records_written_field_by_field_hold_json_scalars_only():
    """What ``encode_record`` writes straight from a record's fields must
    need no converter: a message field, say, would lose its tag."""
    scalars = {int, str, bool, type(None)}
    for cls in _FLAT:
        for field in attrs.fields(attrs.resolve_types(cls)):
            assert set(typing.get_args(field.type) or [field.type]) <= scalars, (cls, field.name)


@settings(max_examples=300, deadline=None)
@given(_turn_records)
def test_the_records_of_a_turn_are_written_as_the_converter_writes_them(record):
    """Their msgspec mirrors write the converter's JSON, tag first, lone
    surrogates and integers past 64 bits included, and it reads back."""
    text = encode_record(record)
    assert text.startswith(f'{{"type":"{record.type}",')
    assert json.loads(text) == json.loads(_dumps(converter.unstructure(record)))
    assert decode_record(text) == record


@given(st.text(), st.integers(min_value=1), st.text(), st.text())
def test_the_checksum_of_a_text_is_the_checksum_of_its_utf8_bytes(session_id, seq, kind, text):
    assert text_checksum(session_id, seq, kind, text) == record_checksum(session_id, seq, kind, text.encode())


def test_a_message_only_json_can_write_still_starts_with_its_tag():
    """A lone surrogate takes ``json``'s way out; ``decode_record`` still
    knows the record for a message."""
    record = MessageAppended(UserMessage("half a pair: \ud800"))
    text = encode_record(record)
    assert text.startswith(_MESSAGE_TAG)
    assert decode_record(text) == record
    assert decode_record(text.encode("utf-8", "surrogatepass")) == record


def test_integers_of_any_size_read_back_exactly():
    for big in (2**63, -(2**63) - 1, 2**70, 10**40):
        message = ToolResultMessage("c", "t", details={"n": big, "list": [big, 1.5]})
        assert decode_message_record(encode_record(MessageAppended(message))) == message


def _assistant(**changes) -> dict:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "stop",
        "usage": {"input_tokens": 1, "output_tokens": 2, "cache_read_tokens": 0, "cache_write_tokens": 0},
        "model": "",
        "provider": "",
        "error": None,
    }
    return {"type": "message_appended", "message": {**message, **changes}}


def _call(arguments: object) -> dict:
    return {"type": "tool_call", "id": "c", "name": "t", "arguments": arguments, "raw_arguments": None}


def _nested(depth: int) -> dict:
    data: dict = {}
    for _ in range(depth):
        data = {"x": data}
    return data


HOSTILE = {
    "content that is a number": _assistant(content=5),
    "a token count that is not a number": _assistant(
        usage={"input_tokens": "many", "output_tokens": 2, "cache_read_tokens": 0, "cache_write_tokens": 0}
    ),
    "an unknown part": _assistant(content=[{"type": "image", "text": "x"}]),
    "an unknown stop reason": _assistant(stop_reason="whenever"),
    "arguments nested too deep": _assistant(content=[_call(_nested(MAX_JSON_DEPTH + 5))]),
    "arguments that are a list": _assistant(content=[_call([1])]),
    "an unknown role": {"type": "message_appended", "message": {"role": "system", "content": "x"}},
    "no message": {"type": "message_appended"},
}


@pytest.mark.parametrize("data", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_message_record_is_refused_on_every_path(data):
    text = json.dumps(data)
    assert _fast_message(text) is None
    with pytest.raises(Exception):  # noqa: B017 -- what the converter raises varies
        decode_message_record(text)
    with pytest.raises(Exception):  # noqa: B017 -- what the converter raises varies
        decode_record(text)


def test_details_the_classes_would_change_read_as_the_converter_makes_them():
    """Data nested too deep is not plain JSON data to ``ToolResultMessage``
    (it keeps its ``repr``): the fast path leaves it to the converter."""
    message = {"role": "tool_result", "tool_call_id": "c", "tool_name": "t", "content": []}
    message |= {"is_error": False, "details": _nested(MAX_JSON_DEPTH + 5), "error_code": None}
    text = json.dumps({"type": "message_appended", "message": message})
    assert _fast_message(text) is None
    read = decode_message_record(text)
    assert read == converter.structure(message, Message)
    assert type(read.details) is str


def test_a_record_in_an_older_shape_is_read_by_the_converter():
    """Fields left out take their defaults, as the converter gives them."""
    data = _assistant()
    for field in ("stop_reason", "usage", "model", "provider", "error"):
        del data["message"][field]
    text = json.dumps(data)
    assert _fast_message(text) is None
    assert decode_message_record(text) == converter.structure(data["message"], Message)


@pytest.mark.parametrize("before_snapshot", [True, False], ids=["in the snapshot's history", "after it"])
@pytest.mark.parametrize("data", list(HOSTILE.values())[:5], ids=list(HOSTILE)[:5])
async def test_a_hostile_stored_message_with_a_valid_checksum_is_store_corrupt(db, data, before_snapshot):
    records = [TurnStarted(1), *(MessageAppended(ToolResultMessage(call, "t")) for call in ("c", "d"))]
    async with SQLiteStore(db) as store:
        await store.create_session(SessionInfo("s1"), records)
        if before_snapshot:
            await store.save_snapshot("s1", SessionState.replay(records))
    _rewrite(db, "s1", 2, json.dumps(data))
    async with SQLiteStore(db) as store:
        with pytest.raises(StoreCorrupt, match=f"{db}: session 's1': record 2 cannot be read"):
            await store.load_state("s1")


async def test_a_restore_reads_no_message_a_compaction_replaced(db):
    """The snapshot holds their summary: a replaced message (here made
    unreadable) is not decoded; reading the whole journal still finds it."""
    records = [
        TurnStarted(1),
        *(MessageAppended(UserMessage(text)) for text in ("old question", "old answer", "kept")),
        Compacted(UserMessage("summary"), 2, "manual", 90, 30, Usage(5, 1)),
    ]
    async with SQLiteStore(db) as store:
        await store.create_session(SessionInfo("s1"), records)
        await store.save_snapshot("s1", SessionState.replay(records))
    _rewrite(db, "s1", 2, json.dumps(HOSTILE["an unknown role"]))
    async with SQLiteStore(db) as store:
        loaded = await store.load_state("s1")
        assert loaded.state.messages == [UserMessage("summary"), UserMessage("kept")]
        assert loaded.state == SessionState.replay(records)
        with pytest.raises(StoreCorrupt, match="record 2 cannot be read"):
            await store.load_session("s1")


def _rewrite(db, session_id: str, seq: int, data_text: str) -> None:
    """Record ``seq`` made ``data_text``, under a checksum that matches it."""
    conn = sqlite3.connect(db)
    with conn:
        checksum = record_checksum(session_id, seq, "message_appended", data_text.encode())
        conn.execute(
            "UPDATE records SET data = ?, checksum = ? WHERE session_id = ? AND seq = ?",
            (data_text, checksum, session_id, seq),
        )
    conn.close()
