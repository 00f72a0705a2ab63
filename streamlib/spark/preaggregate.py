"""Map-side pre-aggregation of a cached ``count`` in the JVM.

A cached count emits each key's last change per commit, which depends only on how
many records the key had and their largest timestamp (see
``StreamAggregateProcessor.count_table``). So a count fed by a repartition needs not
the records themselves but, per key, how many there were: Spark aggregates them
partially before its shuffle (as its own ``groupBy().count()`` does) and the task
receives one row per key with ``records``/``weight`` columns.
"""
from __future__ import annotations

from typing import Optional

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from streamlib.config import StreamsConfig
from streamlib.topology import SubTopology, Topology


def counted_input(topology: Topology, sub: SubTopology, config: StreamsConfig) -> Optional[str]:
    """The repartition topic of a sub-topology that is exactly ``repartition source ->
    cached count (-> anything)`` with matching key bytes; else None."""
    sources = [topology.nodes[n] for n in sub.nodes if topology.nodes[n].kind == "source"]
    if len(sources) != 1 or not config.caching:
        return None
    source = sources[0]
    params = source.params
    if (not params.get("internal") or params.get("changes") or params.get("timestamp_extractor")
            or len(params["topics"]) != 1):
        return None
    children = [topology.nodes[c] for c in topology.children(source.name)]
    if len(children) != 1 or children[0].kind != "aggregate" or children[0].params["op"] != "count":
        return None
    store = topology.stores[children[0].params["store"]]
    if not getattr(store, "caching", True):
        return None
    source_key = params.get("key_serde") or config.default_key_serde
    if (store.key_serde or config.default_key_serde) != source_key:
        return None
    return params["topics"][0]


def preaggregate(rows: DataFrame, topic: str) -> DataFrame:
    """Repartition rows -> one row per key, hash-partitioned by key like
    ``repartition(n, "key")`` when ``spark.sql.shuffle.partitions`` is ``n``."""
    has_value = F.col("value").isNotNull()
    return (rows.groupBy("key").agg(
        F.count(F.lit(1)).alias("records"),
        F.count("value").alias("weight"),
        F.coalesce(F.max(F.when(has_value, F.col("timestamp"))), F.max("timestamp")).alias("timestamp"),
        F.max_by("headers", F.struct("timestamp", "partition", "offset")).alias("headers"),
        F.max(F.struct("partition", "offset")).alias("last"))
        .select(F.lit(topic).alias("topic"), F.col("last.partition").alias("partition"),
                F.col("last.offset").alias("offset"), "timestamp", "key",
                F.lit(b"").cast("binary").alias("value"), "headers", "records", "weight"))
