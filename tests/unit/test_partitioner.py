"""The partitioner must agree bit for bit with the Java client (co-partitioning)."""
import random

import pyarrow as pa
import pytest

from streamlib.topics import default_partitioner, murmur2, partition_array

# org.apache.kafka.common.utils.UtilsTest#testMurmur2, plus values computed with
# Utils.murmur2 quoted by Akka's Murmur2Spec.
JAVA_VECTORS = {
    "21": -973932308,
    "foobar": -790332482,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    "abc": 479470107,
    "1": -1993445489,
    "12": 126087238,
    "123": -267702483,
    "1234": -1614185708,
    "12345": -1188365604,
}


@pytest.mark.parametrize("text,expected", sorted(JAVA_VECTORS.items()))
def test_murmur2_matches_java(text, expected):
    assert murmur2(text.encode()) == expected


def test_default_partitioner_is_to_positive_mod_n():
    for text, h in JAVA_VECTORS.items():
        for n in (1, 3, 7, 12):
            assert default_partitioner(text.encode(), n) == (h & 0x7FFFFFFF) % n


def test_partition_array_agrees_with_scalar_partitioner():
    rng = random.Random(7)
    keys = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))) for _ in range(3000)]
    keys += [t.encode() for t in JAVA_VECTORS]
    arr = pa.array(keys, pa.binary())
    for n in (1, 5, 16):
        assert partition_array(arr, n).tolist() == [default_partitioner(k, n) for k in keys]
    # sliced arrays, string arrays and chunked arrays take the same path
    assert partition_array(arr.slice(100, 50), 5).tolist() == [default_partitioner(k, 5) for k in keys[100:150]]
    strings = pa.chunked_array([pa.array(list(JAVA_VECTORS)[:4]), pa.array(list(JAVA_VECTORS)[4:])])
    assert partition_array(strings, 7).tolist() == [default_partitioner(t.encode(), 7) for t in JAVA_VECTORS]


def test_partition_array_spreads_null_keys_round_robin():
    result = partition_array(pa.array([None, b"abc", None, None], pa.binary()), 2).tolist()
    assert result == [0, default_partitioner(b"abc", 2), 1, 0]
