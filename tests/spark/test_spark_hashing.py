"""streamlib.spark.hashing computes Spark's own hash partitioning in Python."""
from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F

from streamlib.spark.hashing import hash_partition, spark_hash


def test_spark_hash_of_binary_is_sparks_own(spark):
    rng = random.Random(7)
    # every tail length, bytes above 127 (signed in the JVM), the empty value
    keys = [bytes(rng.randrange(256) for _ in range(rng.randrange(13))) for _ in range(500)]
    keys += [str(i).encode() for i in range(100)] + [b""]
    rows = spark.createDataFrame([(k,) for k in keys], "key binary").select("key", F.hash("key").alias("h")).collect()
    assert [spark_hash(bytes(r.key)) for r in rows] == [r.h for r in rows]


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_repartition_sends_keys_where_hash_partition_says(spark, n):
    keys = [str(i).encode() for i in range(40)] + [bytes([200, i]) for i in range(10)]
    rows = (spark.createDataFrame([(k,) for k in keys], "key binary").repartition(n, "key")
            .select("key", F.spark_partition_id().alias("p")).collect())
    assert sorted((bytes(r.key), r.p) for r in rows) == sorted((k, hash_partition(k, n)) for k in keys)
