"""Pre-aggregation of a cached ``count`` before its shuffle.

The count node's own batch lowering (:mod:`streamlib.spark.lowerings`). A cached
count emits each key's last change per commit, which depends only on how many
records the key had and their largest timestamp (see
``StreamCountProcessor.process_batch``). So a count fed by a repartition needs not
the records themselves but, per key, how many there were: Spark aggregates them
partially before its shuffle (as its own ``groupBy().count()`` does) and the task
receives one row per key and distinct headers, with ``records``/``weight`` columns and
the position of the group's last record (the task takes the headers of the key's
last row in processing order).

Headers are a grouping key, not an aggregate: every aggregation buffer is then a
fixed-width number, so Spark aggregates in a hash map; an array in a buffer (as in
``max_by(headers, ...)``) forces a sort of every input row instead. Spark's shuffle
for that aggregation hashes the key and the headers, so its groups are then moved to
their key's partition: every record of a key must reach the one task that counts it,
whatever headers it carries.

A Python stage's tasks combine their rows for the count themselves
(:func:`combine_task_rows`, the same partial aggregation Spark does before its
shuffle), so the JVM receives one row per key and task instead of every record; those
rows are moved to their key's partition first and merged there.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streamlib.config import StreamsConfig
from streamlib.node_kinds import COUNT
from streamlib.processors.columnar import empty_headers
from streamlib.spark.exprs import aggregated, by_key, selected
from streamlib.spark.lowerings import batch_lowering
from streamlib.topology import Node, Topology


@dataclass(frozen=True)
class PreAggregate:
    """The count's batch input: its repartition ``topic``'s rows, one per key."""

    topic: str
    #: the rows come combined by the writing tasks (:func:`combine_task_rows`)
    combined: bool = False

    def __call__(self, rows: DataFrame) -> DataFrame:
        return preaggregate(rows, self.topic, self.combined)


@batch_lowering(COUNT)
def count_lowering(topology: Topology, source: Node, count: Node,
                   config: StreamsConfig) -> Optional[PreAggregate]:
    """A cached count whose input keys are its store's own bytes is pre-aggregated
    (``StreamCountProcessor.takes_batches`` under Spark); an uncached one needs every
    record. Windowed counts are other node kinds, so never come here."""
    if not config.caching:
        return None
    store = topology.stores[count.params.store]
    if not store.caching:
        return None
    source_key = source.params.key_serde
    if store.key_serde != source_key:
        return None
    return PreAggregate(source.params.topics[0])


def preaggregate(rows: DataFrame, topic: str, combined: bool = False) -> DataFrame:
    """Repartition rows -> one row per key and headers, hash-partitioned by key like
    ``repartition(n, "key")`` when ``spark.sql.shuffle.partitions`` is ``n``.
    ``combined``: the rows have ``records``/``weight`` columns (:func:`combine_task_rows`)."""
    if combined:
        # Few rows: shuffled by key, then merged in the key's partition (a hash
        # partitioning by key also clusters by key and headers: no second shuffle).
        merged = aggregated(by_key(rows), "merge counts", _key_and_headers, _merges)
        return selected(merged, ("preaggregate", topic), lambda: _output(topic))
    grouped = aggregated(rows, "preaggregate", _key_and_headers, _aggregates)
    return by_key(selected(grouped, ("preaggregate", topic), lambda: _output(topic)))


def _key_and_headers() -> list[str]:
    return ["key", "headers"]


def _position() -> Column:
    # (partition, offset) order as one long: a Python task's offsets are a sequence
    # below 2**33; a Column chain's are monotonically_increasing_id(), whose own upper
    # bits are the partition, so the order holds for both.
    return F.shiftleft(F.col("partition").cast("long"), 33) + F.col("offset")


def _last_of_group() -> list[Column]:
    position = _position()
    return [F.max_by("partition", position).alias("partition"), F.max_by("offset", position).alias("offset")]


def _aggregates() -> list[Column]:
    has_value = F.col("value").isNotNull()
    return [F.count(F.lit(1)).alias("records"),
            F.count("value").alias("weight"),
            F.coalesce(F.max(F.when(has_value, F.col("timestamp"))), F.max("timestamp")).alias("timestamp"),
            *_last_of_group()]


def _merges() -> list[Column]:
    """:func:`_aggregates` over rows that each stand for ``records`` records, ``weight``
    of them with a value, ``timestamp`` their timestamp as :func:`_aggregates` gives it."""
    has_value = F.col("weight") > 0
    return [F.sum("records").alias("records"),
            F.sum("weight").alias("weight"),
            F.coalesce(F.max(F.when(has_value, F.col("timestamp"))), F.max("timestamp")).alias("timestamp"),
            *_last_of_group()]


def combine_task_rows(rows: pa.Table, topics: frozenset[str]) -> pa.Table:
    """One task's repartition rows (``STAGE_SCHEMA``: its partition, its output sequence as
    offsets) with ``records``/``weight`` columns, where the rows for ``topics`` (inputs
    of pre-aggregated counts) are combined per key as :func:`_aggregates` would (those
    with headers stay as they are: headers are a grouping key, and rare)."""
    n = rows.num_rows
    rows = rows.append_column("records", pa.array(np.ones(n, dtype=np.int64)))
    rows = rows.append_column("weight", pc.cast(pc.is_valid(rows.column("value")), pa.int64()))
    parts = []
    for topic in sorted(topics):
        no_headers = pc.equal(pc.list_value_length(rows.column("headers")), 0)
        # a null (headers or topic) is no match: the row stays as it is, never dropped
        plain = pc.fill_null(pc.and_(pc.equal(rows.column("topic"), topic), no_headers), False)
        if not pc.any(plain).as_py():
            continue
        parts.append(_combined(rows.filter(plain), topic))
        rows = rows.filter(pc.invert(plain))
    return pa.concat_tables([rows, *parts]) if parts else rows


def _combined(rows: pa.Table, topic: str) -> pa.Table:
    """Rows of one topic without headers, from one task -> one row per key."""
    timestamps = rows.column("timestamp")
    valued = pc.if_else(pc.is_valid(rows.column("value")), timestamps, pa.scalar(None, pa.int64()))
    groups = (pa.table({"key": rows.column("key"), "timestamp": timestamps, "valued": valued,
                        "weight": rows.column("weight"), "offset": rows.column("offset")})
              .group_by("key", use_threads=False)
              .aggregate([("weight", "count"), ("weight", "sum"), ("timestamp", "max"), ("valued", "max"),
                          ("offset", "max")]))
    m = groups.num_rows
    # one task's rows: one partition, so the last row of a key has its largest offset
    return pa.table({
        "topic": pa.repeat(pa.scalar(topic, pa.string()), m),
        "partition": pa.repeat(rows.column("partition")[0], m),
        "offset": groups.column("offset_max"),
        "timestamp": pc.coalesce(groups.column("valued_max"), groups.column("timestamp_max")),
        "key": groups.column("key"),
        "value": pa.repeat(pa.scalar(b"", pa.binary()), m),
        "headers": empty_headers(m),
        "records": groups.column("weight_count"),
        "weight": groups.column("weight_sum"),
    }, schema=rows.schema)


def _output(topic: str) -> list[Column]:
    return [F.lit(topic).alias("topic"), F.col("partition"), F.col("offset"), F.col("timestamp"),
            F.col("key"), F.lit(b"").cast("binary").alias("value"), F.col("headers"), F.col("records"),
            F.col("weight")]
