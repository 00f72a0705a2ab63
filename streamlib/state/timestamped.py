"""Values prefixed with their timestamp, the byte layout of Kafka's TimestampedKeyValueStore.

Tables remember when each value was last updated (the output timestamp of a KTable
update); storing the timestamp in the value keeps one RocksDB read per lookup.
"""
from __future__ import annotations

import struct
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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


def encode_timestamped_column(serde: Any, entries: list[Optional[tuple[Any, int]]]) -> list[Optional[bytes]]:
    """:func:`encode_timestamped` of many ``(value, ts)`` entries (``None``: a delete,
    which stays ``None``), serializing the values with ``serde.serialize_column``."""
    values = [None if entry is None else entry[0] for entry in entries]
    stamps = np.fromiter((0 if entry is None else entry[1] for entry in entries), dtype=np.int64,
                         count=len(entries))
    payloads = serde.serialize_column(values)
    if payloads.null_count != values.count(None):
        raise ValueError("the serde turned a value into null")
    stamp_bytes = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(_TIMESTAMP.size), len(entries), [None, pa.py_buffer(stamps.astype(">i8").tobytes())])
    joined = pc.binary_join_element_wise(stamp_bytes.cast(pa.binary()), payloads, pa.scalar(b"", pa.binary()))
    return joined.to_numpy(zero_copy_only=False).tolist()
