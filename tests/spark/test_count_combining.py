"""A Python stage's tasks combine their rows for a pre-aggregated count per key
(``combine_task_rows``); Spark then merges those rows. The merge must give exactly what
Spark's own aggregation of every row gives: counts, the timestamp rule, the last row's
position, and each key in its own partition."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from streamlib.spark.arrow import COMBINED_DDL, SOURCE_DDL
from streamlib.spark.preaggregate import combine_task_rows, preaggregate
from streamlib.spark.tasks import STAGE_SCHEMA

TOPIC, OTHER = "app-counts-repartition", "app-other-repartition"
PARTITIONS = 3


def task_rows(seed: int, partition: int, n: int) -> list[tuple]:
    """One task's repartition rows: its partition, its output sequence as offsets; keys
    repeat (one null), some values null, some rows with headers, timestamps out of order."""
    rng = random.Random(seed * 100 + partition)
    rows = []
    for offset in range(n):
        key = rng.choice([None, b"a", b"b", b"c", b"dd", b"eee", b"f" * 9])
        value = None if rng.random() < 0.25 else b"x"
        headers = [("trace", rng.choice([b"1", b"2"]))] if rng.random() < 0.2 else []
        topic = OTHER if rng.random() < 0.1 else TOPIC
        rows.append((topic, partition, offset, rng.randrange(0, 50), key, value, headers))
    return rows


def as_table(rows: list[tuple]) -> pa.Table:
    columns = list(zip(*rows))
    headers = [None if h is None else [{"key": k, "value": v} for k, v in h] for h in columns[6]]
    return pa.Table.from_arrays(
        [pa.array(c, t) for c, t in zip(columns[:6], STAGE_SCHEMA.types[:6])]
        + [pa.array(headers, STAGE_SCHEMA.field("headers").type)], schema=STAGE_SCHEMA)


def test_rows_without_headers_become_one_per_key_and_the_rest_stay():
    rows = [(TOPIC, 2, 0, 10, b"a", b"x", []), (TOPIC, 2, 1, 30, b"a", None, []),
            (TOPIC, 2, 2, 20, b"a", b"x", []), (TOPIC, 2, 3, 5, b"a", b"x", [("h", b"1")]),
            (OTHER, 2, 4, 7, b"a", b"x", []), (TOPIC, 2, 5, 1, None, None, []),
            (TOPIC, 2, 6, 2, b"g", b"x", None)]
    combined = combine_task_rows(as_table(rows), frozenset({TOPIC})).to_pylist()
    by_key = {(r["topic"], r["key"], bool(r["headers"])): r for r in combined}
    assert len(combined) == 5
    assert (by_key[(TOPIC, b"g", False)]["headers"], by_key[(TOPIC, b"g", False)]["records"]) == (None, 1)
    # three records of "a", two with a value: the timestamp is the valued ones' largest
    a = by_key[(TOPIC, b"a", False)]
    assert (a["records"], a["weight"], a["timestamp"], a["offset"], a["partition"]) == (3, 2, 20, 2, 2)
    assert (by_key[(TOPIC, b"a", True)]["records"], by_key[(TOPIC, b"a", True)]["offset"]) == (1, 3)
    assert (by_key[(OTHER, b"a", False)]["records"], by_key[(OTHER, b"a", False)]["offset"]) == (1, 4)
    null_key = by_key[(TOPIC, None, False)]
    assert (null_key["records"], null_key["weight"], null_key["timestamp"]) == (1, 0, 1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_merging_combined_rows_gives_what_aggregating_every_row_gives(spark, seed):
    tasks = [task_rows(seed, p, 200) for p in range(PARTITIONS)]
    every_row = spark.createDataFrame([r for rows in tasks for r in rows], SOURCE_DDL).repartition(2)
    combined = [combine_task_rows(as_table(rows), frozenset({TOPIC})) for rows in tasks]
    # rows with headers (a fifth) and for the other topic (a tenth) stay as they are
    assert sum(t.num_rows for t in combined) < sum(len(rows) for rows in tasks) / 2
    combined_rows = spark.createDataFrame(pa.concat_tables(combined).to_pylist(),
                                          f"{SOURCE_DDL}, {COMBINED_DDL}").repartition(2)
    only = F.col("topic") == TOPIC

    def counted(rows, combined_input):
        out = preaggregate(rows.where(only), TOPIC, combined_input)
        return out.withColumn("task", F.spark_partition_id())

    # as the compiler sets them for a batch: a key's task is its shuffle partition
    saved = {name: spark.conf.get(name) for name in ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled")}
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        expected = counted(every_row, False)
        assert expected.select("task").distinct().count() > 1
        assert_df_equality(counted(combined_rows, True), expected, ignore_row_order=True,
                           ignore_nullable=True)
    finally:
        for name, value in saved.items():
            spark.conf.set(name, value)
