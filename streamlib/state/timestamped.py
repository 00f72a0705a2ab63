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


def decode_timestamped_column(raws: list[Optional[bytes]]) -> tuple[pa.Array, np.ndarray]:
    """:func:`decode_timestamped` of many stored values at once (``None``: absent):
    ``(values, timestamps)``, the values a binary Arrow array (null where absent), the
    timestamps an int64 array (0 where absent). Raises if a value is shorter than 8 bytes."""
    data = pa.array(raws, pa.binary())
    filled = data.fill_null(bytes(_TIMESTAMP.size))
    lengths = pc.min_max(pc.binary_length(filled)).as_py()
    if lengths["min"] is not None and lengths["min"] < _TIMESTAMP.size:
        raise ValueError(f"a timestamped value needs at least {_TIMESTAMP.size} bytes, got {lengths['min']}")
    fixed = pc.binary_slice(filled, 0, _TIMESTAMP.size).cast(pa.binary(_TIMESTAMP.size))
    stamps = np.frombuffer(fixed.buffers()[1], dtype=">i8", count=len(fixed) + fixed.offset)[fixed.offset:]
    # (pyarrow 22's binary_slice without a stop mis-sizes its output, and slices of
    # nulls: so an explicit stop, over the nulls filled in and put back)
    values = pc.binary_slice(filled, _TIMESTAMP.size, max(lengths["max"] or 0, _TIMESTAMP.size))
    if data.null_count:
        values = pc.if_else(data.is_valid(), values, pa.scalar(None, pa.binary()))
    return values, stamps.astype(np.int64)
