"""Incremental Server-Sent Events decoding: bytes in, events out.

Follows the WHATWG event-stream rules: lines end with CRLF, LF or CR; lines
starting with ``:`` are comments; ``data:`` lines of one event are joined
with ``\\n``; a blank line dispatches the event; an event without data is
not dispatched; one leading space after the colon is dropped. Bytes may be
split anywhere, even inside a CRLF pair or a UTF-8 sequence: lines are only
decoded once complete, and no UTF-8 sequence contains a CR or LF byte.

One deliberate difference from the browser rules: ``close()`` dispatches an
event that the stream ended without its final blank line, since some
servers omit it and the last event is often the one that matters.

Decoding takes time linear in the bytes fed, however they are split, and
memory bounded by ``max_event_bytes``: a line or an event that grows past it
raises ``ProviderError(type="invalid_response")``.
"""

from __future__ import annotations

import attrs

from .provider_errors import provider_error

#: The largest line or event a stream may send. The biggest legitimate event
#: is a final one that repeats a whole answer (OpenAI Responses'
#: ``response.completed``): a long answer is well under 1 MiB of JSON, and a
#: few generated images in base64 some MiB. 16 MiB leaves room for those and
#: still bounds what a broken or hostile server can make us hold.
MAX_EVENT_BYTES = 16 * 2**20

_BOM = b"\xef\xbb\xbf"
_LF, _CR = 0x0A, 0x0D
_LINE_ENDS = (_LF, _CR)


@attrs.frozen(slots=True)
class ServerSentEvent:
    data: str
    event: str = "message"
    #: The last event id seen so far (it persists across events, per spec).
    id: str | None = None


class SSEDecoder:
    """Feed it bytes as they arrive; it returns the events they complete."""

    def __init__(self, *, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self.max_event_bytes = max_event_bytes
        # The start of a line whose end has not arrived, as chunks: joined
        # once, when the end comes, so a long line costs its length, not its
        # length times the number of reads.
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._data_size = 0  # bytes of data held for the current event
        self._after_cr = False  # the last line ended in CR: a leading LF belongs to it
        self._at_start = True
        self._event = ""
        self._data: list[str] = []
        self._last_id: str | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if not chunk:
            return []
        if self._after_cr:
            self._after_cr = False
            if chunk[0] == _LF:
                chunk = chunk[1:]
                if not chunk:
                    return []
        if _LF not in chunk and _CR not in chunk:  # int lookups: a memchr each
            self._hold(chunk)  # the line goes on: no need to split anything yet
            return []
        if self._pending:
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            self._pending, self._pending_size = [], 0
        if self._at_start:
            self._at_start = False
            chunk = chunk.removeprefix(_BOM)
        lines = chunk.splitlines(keepends=True)
        if lines[-1][-1] in _LINE_ENDS:
            self._after_cr = chunk[-1] == _CR
        else:
            self._hold(lines.pop())
        events: list[ServerSentEvent] = []
        append_data = self._data.append
        for line in lines:
            line = line.rstrip(b"\r\n")
            # The hot path: a model stream is blank lines and data lines.
            if not line:
                if self._data:
                    events.append(
                        ServerSentEvent("\n".join(self._data), self._event or "message", self._last_id)
                    )
                    self._data = []
                    self._data_size = 0
                    append_data = self._data.append
                self._event = ""
            elif line.startswith(b"data:"):
                self._data_size += len(line)
                if self._data_size > self.max_event_bytes:
                    raise _too_big("an event", self.max_event_bytes)
                append_data((line[6:] if line[5:6] == b" " else line[5:]).decode("utf-8", "replace"))
            else:
                self._field(line)
        return events

    def close(self) -> list[ServerSentEvent]:
        """The events still held when the stream ends: a last line without
        its line end and an event without its final blank line."""
        tail = b"".join(self._pending)
        self._pending, self._pending_size = [], 0
        self._after_cr = False
        return self.feed(tail + b"\n\n")

    def _hold(self, part: bytes) -> None:
        self._pending_size += len(part)
        if self._pending_size > self.max_event_bytes:
            raise _too_big("a line", self.max_event_bytes)
        self._pending.append(part)

    def _field(self, line: bytes) -> None:
        if line[0] == 0x3A:  # ':' starts a comment
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"data":  # "data" without a colon: an empty data line
            self._data_size += 1
            if self._data_size > self.max_event_bytes:
                raise _too_big("an event", self.max_event_bytes)
            self._data.append("")
        elif name == b"id" and b"\0" not in value:
            self._last_id = value.decode("utf-8", "replace")
        # "retry" and unknown fields are ignored: reconnection is the
        # caller's business, not the decoder's.


def _too_big(what: str, limit: int) -> Exception:
    return provider_error(
        {"type": "invalid_response", "message": f"{what} of the event stream is longer than {limit} bytes"}
    )
