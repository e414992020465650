"""The SSE decoder: framings, and any split of the bytes giving the same events."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrio.models import ProviderError
from agentrio.models.sse import ServerSentEvent, SSEDecoder


def decode(*chunks: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)]
    return events + decoder.close()


def test_lf_framing_with_named_events_and_comments():
    body = b': keep-alive\nevent: ping\ndata: {}\n\ndata: {"a": 1}\n\n: bye\n\n'
    assert decode(body) == [ServerSentEvent("{}", "ping"), ServerSentEvent('{"a": 1}')]


def test_crlf_and_cr_framing():
    assert decode(b"data: a\r\n\r\ndata: b\r\rdata: c\r\n\r\n") == [
        ServerSentEvent("a"),
        ServerSentEvent("b"),
        ServerSentEvent("c"),
    ]


def test_multi_line_data_is_joined_with_newlines():
    assert decode(b"data: first\ndata:second\ndata\ndata:  two spaces\n\n") == [
        ServerSentEvent("first\nsecond\n\n two spaces")
    ]


def test_event_without_data_is_not_dispatched_and_event_name_resets():
    assert decode(b"event: lonely\n\ndata: x\n\n") == [ServerSentEvent("x", "message")]


def test_missing_final_blank_line_still_dispatches_the_last_event():
    assert decode(b"data: one\n\ndata: last") == [ServerSentEvent("one"), ServerSentEvent("last")]
    assert decode(b"data: one\n\ndata: last\n") == [ServerSentEvent("one"), ServerSentEvent("last")]
    assert decode(b"data: one\r\rdata: last\r") == [ServerSentEvent("one"), ServerSentEvent("last")]
    assert decode(b"data: one\r\n\r\n") == [ServerSentEvent("one")]
    assert decode(b"") == []


def test_crlf_split_between_reads_is_one_line_end():
    # A CR at the end of one read and the LF at the start of the next must
    # not count as two line ends (that would end the event early).
    assert decode(b"data: a\r", b"\ndata: b\r\n\r\n") == [ServerSentEvent("a\nb")]


def test_utf8_split_inside_a_character():
    body = "data: é🦅\n\n".encode()
    for cut in range(len(body) + 1):
        assert decode(body[:cut], body[cut:]) == [ServerSentEvent("é🦅")]


def test_byte_order_mark_is_skipped_even_when_split():
    body = b"\xef\xbb\xbfdata: x\n\n"
    for cut in range(5):
        assert decode(body[:cut], body[cut:]) == [ServerSentEvent("x")]


def test_id_persists_and_retry_and_unknown_fields_are_ignored():
    body = b"id: 7\nretry: 100\nfoo: bar\ndata: a\n\ndata: b\n\nid\ndata: c\n\n"
    assert decode(body) == [
        ServerSentEvent("a", id="7"),
        ServerSentEvent("b", id="7"),
        ServerSentEvent("c", id=""),
    ]


def test_empty_reads_change_nothing():
    assert decode(b"data: a\r", b"", b"\n\n") == [ServerSentEvent("a")]


# Property: whatever the line ends and however the bytes are split, the
# decoder finds exactly the events that were written.

_text = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20)
_event = st.tuples(
    st.one_of(
        st.none(),
        st.text(
            st.characters(blacklist_characters="\r\n:", blacklist_categories=("Cs",)), min_size=1, max_size=8
        ),
    ),
    st.lists(_text, min_size=1, max_size=3),
    st.booleans(),  # a comment line before the fields
    st.booleans(),  # "data: x" rather than "data:x"
)


@st.composite
def _stream(draw):
    events = draw(st.lists(_event, max_size=6))
    # One line end per stream: mixed, a CR line end followed by an LF one
    # would rightly read as a single CRLF.
    line_end = st.just(draw(st.sampled_from([b"\n", b"\r\n", b"\r"])))
    out = bytearray()
    expected = []
    for name, lines, comment, spaced in events:
        if comment:
            out += b": " + draw(_text).encode() + draw(line_end)
        if name is not None:
            out += b"event: " + name.encode() + draw(line_end)
        for line in lines:
            # Without the space, a value starting with a space would lose it.
            prefix = b"data: " if spaced or line.startswith(" ") else b"data:"
            out += prefix + line.encode() + draw(line_end)
        out += draw(line_end)
        expected.append(ServerSentEvent("\n".join(lines), name or "message"))
    if events and draw(st.booleans()):
        out = out.rstrip(b"\r\n") + b"\n"  # the final blank line is missing
    cuts = sorted(draw(st.lists(st.integers(0, len(out)), max_size=8)))
    chunks = [bytes(out[a:b]) for a, b in zip([0, *cuts], [*cuts, len(out)])]
    return chunks, expected


@given(_stream())
def test_any_split_and_framing_gives_the_written_events(stream):
    chunks, expected = stream
    assert decode(*chunks) == expected


# Bounds: a line or an event past ``max_event_bytes`` is an invalid response,
# and an endless line never makes the decoder hold more than that.


def test_a_line_longer_than_the_limit_is_an_invalid_response():
    decoder = SSEDecoder(max_event_bytes=1000)
    assert decoder.feed(b"data: " + b"x" * 900) == []
    with pytest.raises(ProviderError) as raised:
        decoder.feed(b"x" * 200)
    assert raised.value.type == "invalid_response"
    assert "a line of the event stream is longer than 1000 bytes" in raised.value.message


def test_an_event_of_many_lines_longer_than_the_limit_is_an_invalid_response():
    decoder = SSEDecoder(max_event_bytes=1000)
    with pytest.raises(ProviderError, match="an event of the event stream is longer than 1000 bytes"):
        for _ in range(100):
            decoder.feed(b"data: " + b"y" * 50 + b"\n")


def test_events_up_to_the_limit_pass_and_the_count_restarts_with_each_event():
    decoder = SSEDecoder(max_event_bytes=1000)
    events = []
    for _ in range(50):
        events += decoder.feed(b"data: " + b"z" * 900 + b"\n\n")
    assert [len(e.data) for e in events] == [900] * 50


def test_an_endless_line_never_holds_more_than_the_limit():
    limit = 2**20
    decoder = SSEDecoder(max_event_bytes=limit)
    chunk = b"a" * 4096
    tracemalloc.start()
    try:
        with pytest.raises(ProviderError):
            for _ in range(64 * 2**20 // len(chunk)):  # a 64 MiB line, if it were read to its end
                decoder.feed(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * limit


def test_a_long_line_in_small_reads_is_one_event():
    decoder = SSEDecoder()
    line = b"data: " + b"q" * (2**20)
    events = [e for i in range(0, len(line), 1000) for e in decoder.feed(line[i : i + 1000])]
    events += decoder.feed(b"\r\n\r\n")
    assert [len(e.data) for e in events] == [2**20]
