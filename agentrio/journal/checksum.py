"""Checksums that make damage to stored records visible.

Every store keeps, beside each record's JSON, ``record_checksum`` of the
exact bytes it stores, computed when it writes them, and checks it on every
read: a mismatch is ``StoreCorrupt`` naming the session and the record,
never a changed history. The same goes for snapshots with
``snapshot_checksum``. The checksum covers where the record belongs (its
session and sequence number) and its kind too, so a record moved to
another place is caught as well as one whose bytes changed.
"""

from __future__ import annotations

import zlib


def record_checksum(session_id: str, seq: int, kind: str, data: bytes) -> int:
    """CRC-32 (unsigned, 0 to 2**32 - 1) of a record as stored. A CRC-32
    catches every change confined to 32 consecutive bits, so every
    single-byte flip, and all but one in 2**32 larger changes."""
    return zlib.crc32(data, zlib.crc32(f"{session_id}\0{seq}\0{kind}\0".encode()))


def text_checksum(session_id: str, seq: int, kind: str, text: str) -> int:
    """``record_checksum`` of ``text`` stored as UTF-8, in one pass: what a
    store that keeps the record's JSON as text computes."""
    return zlib.crc32(f"{session_id}\0{seq}\0{kind}\0{text}".encode())


def snapshot_checksum(session_id: str, seq: int, message_count: int, state: bytes) -> int:
    """CRC-32 of a snapshot as stored: the state and what it stands for."""
    return zlib.crc32(state, zlib.crc32(f"{session_id}\0{seq}\0{message_count}\0snapshot\0".encode()))
