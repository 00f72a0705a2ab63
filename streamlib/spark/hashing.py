"""Spark's hash partitioning, computed in Python.

``repartition(n, "key")`` sends a row to ``pmod(hash(key), n)``, where ``hash`` is
Spark's ``Murmur3Hash`` with seed 42. For a binary (or string) column that is
``Murmur3_x86_32.hashUnsafeBytes``: standard Murmur3 over the whole 4-byte words
(little-endian), but each trailing byte mixed in as a whole signed int, not packed
into one last word. Knowing it, the driver picks keys for given partitions without
running a Spark job.
"""
from __future__ import annotations

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
