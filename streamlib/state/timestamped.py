"""Values prefixed with their timestamp, the byte layout of Kafka's TimestampedKeyValueStore.

Tables remember when each value was last updated (the output timestamp of a KTable
update); storing the timestamp in the value keeps one RocksDB read per lookup.
"""
from __future__ import annotations

import struct
from typing import Optional

_TIMESTAMP = struct.Struct(">q")


def encode_timestamped(value: Optional[bytes], ts: int) -> bytes:
    """8-byte big-endian ``ts`` followed by ``value``. As in Kafka, ``None`` encodes like an
    empty value: stores delete a key for a tombstone instead of storing it."""
    return _TIMESTAMP.pack(ts) + (value or b"")


def decode_timestamped(data: bytes) -> tuple[bytes, int]:
    """Inverse of :func:`encode_timestamped`: ``(value, ts)``."""
    if len(data) < _TIMESTAMP.size:
        raise ValueError(f"a timestamped value needs at least 8 bytes, got {len(data)}")
    return bytes(data[_TIMESTAMP.size:]), _TIMESTAMP.unpack_from(data)[0]
