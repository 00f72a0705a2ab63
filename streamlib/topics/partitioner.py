"""Java-client-compatible key partitioning.

Kafka Streams co-partitioning only works if every producer maps a key to the same
partition, so this reproduces ``org.apache.kafka.common.utils.Utils.murmur2``
(seed ``0x9747b28c``) and the Java ``DefaultPartitioner`` rule
``toPositive(murmur2(key)) % n`` bit for bit.
"""
from __future__ import annotations

import struct
from itertools import count

import numpy as np
import pyarrow as pa

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """The Java client's 32-bit murmur2 of ``data`` as a signed int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length >> 2
    for k in struct.unpack_from(f"<{n4}I", data):
        k = (k * _M) & _MASK
        k ^= k >> 24
        h = ((h * _M) & _MASK) ^ ((k * _M) & _MASK)
    rem = length & 3
    if rem:
        tail = n4 << 2
        if rem == 3:
            h ^= data[tail + 2] << 16
        if rem >= 2:
            h ^= data[tail + 1] << 8
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def default_partitioner(key_bytes: bytes, num_partitions: int) -> int:
    """Partition of a non-``None`` key, as the Java producer computes it."""
    return (murmur2(key_bytes) & 0x7FFFFFFF) % num_partitions


def partition_array(keys: pa.Array | pa.ChunkedArray, num_partitions: int) -> np.ndarray:
    """Vectorised :func:`default_partitioner` over an Arrow binary/string array.

    ``None`` keys are spread round robin, as :meth:`TopicBackend.produce` does.
    Runs one numpy pass per 4-byte block of the longest key, not one Python
    call per record.
    """
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks else pa.array([], pa.binary())
    if pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type):
        keys = keys.cast(pa.large_binary() if pa.types.is_large_string(keys.type) else pa.binary())
    if not (pa.types.is_binary(keys.type) or pa.types.is_large_binary(keys.type)):
        raise TypeError(f"partition_array needs binary or string keys, got {keys.type}")
    n = len(keys)
    offsets_type = np.int64 if pa.types.is_large_binary(keys.type) else np.int32
    _, offsets_buf, data_buf = keys.buffers()
    offsets = np.frombuffer(offsets_buf, offsets_type)[keys.offset:keys.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    m = np.uint32(_M)
    with np.errstate(over="ignore"):
        h = np.uint32(_SEED) ^ lengths.astype(np.uint32)
        n4 = lengths >> 2
        for block in range(int(n4.max()) if n else 0):
            rows = np.nonzero(n4 > block)[0]
            pos = starts[rows] + 4 * block
            k = (data[pos].astype(np.uint32) | (data[pos + 1].astype(np.uint32) << 8)
                 | (data[pos + 2].astype(np.uint32) << 16) | (data[pos + 3].astype(np.uint32) << 24))
            k *= m
            k ^= k >> np.uint32(24)
            k *= m
            h[rows] = (h[rows] * m) ^ k
        rem = lengths & 3
        tail = starts + (n4 << 2)
        for size, shift in ((3, 16), (2, 8)):
            rows = np.nonzero(rem >= size)[0]
            h[rows] ^= data[tail[rows] + size - 1].astype(np.uint32) << np.uint32(shift)
        rows = np.nonzero(rem >= 1)[0]
        h[rows] ^= data[tail[rows]].astype(np.uint32)
        h[rows] *= m
        h ^= h >> np.uint32(13)
        h *= m
        h ^= h >> np.uint32(15)
    result = ((h & np.uint32(0x7FFFFFFF)) % np.uint32(num_partitions)).astype(np.int32)
    if keys.null_count:
        nulls = np.nonzero(keys.is_null().to_numpy(zero_copy_only=False))[0]
        result[nulls] = np.arange(len(nulls), dtype=np.int32) % num_partitions
    return result


class RoundRobin:
    """Partition choice for ``None`` keys: cycle through the partitions."""

    def __init__(self) -> None:
        self._counter = count()

    def __call__(self, num_partitions: int) -> int:
        return next(self._counter) % num_partitions
