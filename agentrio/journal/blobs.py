"""Images and documents stored once: content-addressed blobs beside the records.

A record that holds an image or a document would carry its bytes as
base64 every time: an image a user sends three times, or one a prompt
carries through the inbox and into history, would be stored three or more
times. A database store instead keeps each distinct blob once, keyed by the
SHA-256 of its bytes, and the record's text names it.

``extract(text)`` takes the encoded text of a record (as ``codec`` writes
it: compact JSON, a part's tag first, then its ``data``) and gives the text
to store and the blobs it refers to. Only a part's ``data`` of at least
``MIN_BLOB_BYTES`` bytes, in canonical base64 (so that writing its blob back
as base64 gives the same text), is moved out. A stored text that refers to
blobs starts with ``MARK``, which no JSON text starts with, so a text is
never read for references it does not hold; a record whose own text already
holds something that looks like a reference is stored inline as it is.

``restore(text, blob)`` gives back the exact text that was encoded, with
``blob(key)`` reading a blob by its key; a blob whose bytes do not hash to
its key is ``StoreCorrupt``. Blobs are never changed or deleted once
written (a session's deletion leaves them), so a blob a record refers to is
there for as long as the record is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable

from .store import StoreCorrupt

#: How a stored text that refers to blobs starts.
MARK = "blobs:"
_MARK_BYTES = MARK.encode()
_REF = "blob:sha256:"
#: Smaller data stays in the record: a reference and a row cost more.
MIN_BLOB_BYTES = 1024

_PART = re.compile(r'\{"type":"(?:image|document)","data":"([A-Za-z0-9+/]*={0,2})"')
_REF_IN_PART = re.compile(rb'(\{"type":"(?:image|document)","data":")blob:sha256:([0-9a-f]{64})"')


def blob_key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def extract(text: str) -> tuple[str, dict[str, bytes]]:
    """The text to store for ``text`` and the blobs (key -> bytes) it refers to."""
    if '"data":"' not in text or _REF in text:
        return text, {}
    blobs: dict[str, bytes] = {}

    def swap(match: re.Match[str]) -> str:
        encoded = match.group(1)
        if len(encoded) * 3 // 4 < MIN_BLOB_BYTES:
            return match.group(0)
        try:
            data = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            return match.group(0)
        if base64.b64encode(data).decode("ascii") != encoded:
            return match.group(0)  # not canonical: it would not come back the same
        key = blob_key(data)
        blobs[key] = data
        return match.group(0)[: match.start(1) - match.start(0)] + _REF + key + '"'

    stored = _PART.sub(swap, text)
    return (MARK + stored, blobs) if blobs else (text, {})


def refers_to_blobs(text: str | bytes) -> bool:
    return text.startswith(_MARK_BYTES if isinstance(text, bytes) else MARK)  # type: ignore[arg-type]


class _Recent:
    """The base64 text of the blobs restored lately, at most ``limit`` bytes
    of it: a session that holds an image several times (the inbox and
    history) reads, checks and encodes it once. Keyed by content, so an
    entry is right for every store; the store threads share it."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            encoded = self._items.get(key)
            if encoded is not None:
                self._items.move_to_end(key)
            return encoded

    def put(self, key: str, encoded: bytes) -> None:
        if len(encoded) > self._limit:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = encoded
            self._size += len(encoded)
            while self._size > self._limit:
                _, dropped = self._items.popitem(last=False)
                self._size -= len(dropped)


#: Up to 16 MB of base64: a few images, never a growing pile.
_recent = _Recent(16 * 1024 * 1024)


def restore(text: bytes, blob: Callable[[str], bytes | None], where: str) -> bytes:
    """The text ``extract`` was given, from what it stored (``text``, which
    starts with ``MARK``). ``where`` names the record in errors."""

    def put_back(match: re.Match[bytes]) -> bytes:
        key = match.group(2).decode("ascii")
        encoded = _recent.get(key)
        if encoded is None:
            data = blob(key)
            if data is None:
                raise StoreCorrupt(f"{where}: blob {key} is missing")
            if blob_key(data) != key:
                raise StoreCorrupt(f"{where}: blob {key} is damaged (its bytes do not hash to its key)")
            encoded = base64.b64encode(data)
            _recent.put(key, encoded)
        return match.group(1) + encoded + b'"'

    return _REF_IN_PART.sub(put_back, text[len(_MARK_BYTES) :])
