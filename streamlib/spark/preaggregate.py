"""Map-side pre-aggregation of a cached ``count`` in the JVM.

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
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streamlib.config import StreamsConfig
from streamlib.node_kinds import COUNT
from streamlib.spark.exprs import once
from streamlib.spark.lowerings import batch_lowering
from streamlib.topology import Node, Topology


@dataclass(frozen=True)
class PreAggregate:
    """The count's batch input: its repartition ``topic``'s rows, one per key."""

    topic: str

    def __call__(self, rows: DataFrame) -> DataFrame:
        return preaggregate(rows, self.topic)


@batch_lowering(COUNT)
def count_lowering(topology: Topology, source: Node, count: Node,
                   config: StreamsConfig) -> Optional[PreAggregate]:
    """A cached count whose input keys are its store's own bytes is pre-aggregated
    (``StreamCountProcessor.takes_batches`` under Spark); an uncached one needs every
    record. Windowed counts are other node kinds, so never come here."""
    if not config.caching:
        return None
    store = topology.stores[count.params["store"]]
    if not store.caching:
        return None
    source_key = source.params.get("key_serde") or config.default_key_serde
    if (store.key_serde or config.default_key_serde) != source_key:
        return None
    return PreAggregate(source.params["topics"][0])


def preaggregate(rows: DataFrame, topic: str) -> DataFrame:
    """Repartition rows -> one row per key and headers, hash-partitioned by key like
    ``repartition(n, "key")`` when ``spark.sql.shuffle.partitions`` is ``n``."""
    aggregates = once("preaggregate", _aggregates)
    output = once(("preaggregate", topic), lambda: _output(topic))
    grouped = rows.groupBy("key", "headers").agg(*aggregates).select(*output)
    return grouped.repartition(once("key", lambda: F.col("key")))


def _aggregates() -> list[Column]:
    has_value = F.col("value").isNotNull()
    # (partition, offset) order as one long: a Python task's offsets are a sequence
    # below 2**33; a Column chain's are monotonically_increasing_id(), whose own upper
    # bits are the partition, so the order holds for both.
    position = F.shiftleft(F.col("partition").cast("long"), 33) + F.col("offset")
    return [F.count(F.lit(1)).alias("records"),
            F.count("value").alias("weight"),
            F.coalesce(F.max(F.when(has_value, F.col("timestamp"))), F.max("timestamp")).alias("timestamp"),
            F.max_by("partition", position).alias("partition"),
            F.max_by("offset", position).alias("offset")]


def _output(topic: str) -> list[Column]:
    return [F.lit(topic).alias("topic"), F.col("partition"), F.col("offset"), F.col("timestamp"),
            F.col("key"), F.lit(b"").cast("binary").alias("value"), F.col("headers"), F.col("records"),
            F.col("weight")]
