"""Spark's hash partitioning, computed in Python.

``repartition(n, "key")`` sends a row to ``pmod(hash(key), n)``, where ``hash`` is
Spark's ``Murmur3Hash`` with seed 42. For a binary (or string) column that is
``Murmur3_x86_32.hashUnsafeBytes``: standard Murmur3 over the whole 4-byte words
(little-endian), but each trailing byte mixed in as a whole signed int, not packed
into one last word. Knowing it, the driver picks keys for given partitions without
running a Spark job.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

SEED = 42
_C1, _C2 = 0xCC9E2D51, 0x1B873593
_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * _C1) & _MASK, 15) * _C2) & _MASK


def _mix_h1(h1: int, k1: int) -> int:
    return (_rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & _MASK


def spark_hash(data: bytes, seed: int = SEED) -> int:
    """Spark SQL's ``hash(data)`` of a binary value, as a signed 32-bit int."""
    h1 = seed & _MASK
    aligned = len(data) - len(data) % 4
    for i in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(data[i:i + 4], "little")))
    for byte in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1((byte - 256 if byte > 127 else byte) & _MASK))
    h1 ^= len(data)
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def hash_partition(data: bytes, n: int) -> int:
    """The partition of ``n`` that ``repartition(n, key)`` sends key bytes ``data`` to."""
    return spark_hash(data) % n   # Python's % of a positive n is Spark's pmod


def _mix_k1_array(k1: np.ndarray) -> np.ndarray:
    k1 = k1 * np.uint32(_C1)
    k1 = (k1 << np.uint32(15)) | (k1 >> np.uint32(17))
    return k1 * np.uint32(_C2)


def _mix_h1_array(h1: np.ndarray, k1: np.ndarray) -> np.ndarray:
    h1 = h1 ^ k1
    h1 = (h1 << np.uint32(13)) | (h1 >> np.uint32(19))
    return h1 * np.uint32(5) + np.uint32(0xE6546B64)


def hash_partitions(keys: pa.Array, n: int) -> np.ndarray:
    """:func:`hash_partition` of every value of a binary array without nulls, over whole
    columns (a loop over 4-byte word positions, not over values).

    >>> keys = [b"", b"a", b"sensor-17", bytes([200, 1, 2, 3, 4])]
    >>> hash_partitions(pa.array(keys, pa.binary()), 7).tolist() == [hash_partition(k, 7) for k in keys]
    True
    """
    keys = keys.cast(pa.large_binary())
    count = len(keys)
    _, offsets_buffer, data_buffer = keys.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64, count=count + 1, offset=keys.offset * 8)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    aligned = lengths - lengths % 4
    h1 = np.full(count, SEED, dtype=np.uint32)
    for i in range(0, int(aligned.max(initial=0)), 4):
        rows = np.flatnonzero(aligned > i)
        at = starts[rows] + i
        word = (data[at].astype(np.uint32) | data[at + 1].astype(np.uint32) << np.uint32(8)
                | data[at + 2].astype(np.uint32) << np.uint32(16) | data[at + 3].astype(np.uint32) << np.uint32(24))
        h1[rows] = _mix_h1_array(h1[rows], _mix_k1_array(word))
    for j in range(3):   # each trailing byte as a signed int (see the module docstring)
        rows = np.flatnonzero(lengths - aligned > j)
        tail = data[starts[rows] + aligned[rows] + j].view(np.int8).astype(np.int32).view(np.uint32)
        h1[rows] = _mix_h1_array(h1[rows], _mix_k1_array(tail))
    h1 ^= lengths.astype(np.uint32)
    h1 ^= h1 >> np.uint32(16)
    h1 *= np.uint32(0x85EBCA6B)
    h1 ^= h1 >> np.uint32(13)
    h1 *= np.uint32(0xC2B2AE35)
    h1 ^= h1 >> np.uint32(16)
    return np.mod(h1.view(np.int32).astype(np.int64), n)
