"""``kafka://`` inputs through Spark's own Kafka source (``spark-sql-kafka-0-10``).

Spark reads Kafka in the JVM: partitions are ``assign``-ed explicitly, starting at
explicit offsets (each partition's earliest on the first run), and Spark's checkpoint
keeps the offsets. The rows are reshaped to the columns of streamlib's own topic data
source (``topic, partition, offset, timestamp`` in epoch ms, ``key, value, headers``),
so everything downstream is the same whichever source ran. The embedded log
(``local://``) keeps streamlib's own data source.

The source's jars (the version pinned in ``streamlib/versions.env``, matching PySpark)
come from ``make jars`` (``.cache/spark-kafka/``) when streamlib creates the session,
else Spark fetches them (``spark.jars.packages``); under ``spark-submit`` pass
``--packages`` (:func:`streamlib.jvm.spark_kafka_package`).

>>> sorted(session_conf("local://./data"))
[]
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from streamlib import jvm
from streamlib.spark.arrow import HEADERS_DDL
from streamlib.topics import parse_url

#: librdkafka settings with no Java consumer counterpart (or set here): not passed on.
_NOT_JAVA = ("enable.partition.eof", "fetch.wait.max.ms", "logger", "group.id", "enable.auto.commit",
             "socket.connection.setup.timeout.ms")


def is_kafka(bootstrap: str) -> bool:
    """Whether ``bootstrap`` names a Kafka cluster (``kafka://host:port,...``).

    >>> is_kafka("kafka://127.0.0.1:9092"), is_kafka("local://./streamlib-data")
    (True, False)
    """
    return bootstrap.startswith("kafka://")


def session_conf(bootstrap: str) -> dict[str, str]:
    """Settings a new session needs to read ``bootstrap`` with Spark's Kafka source:
    the fetched jars, else the package for Spark to fetch; nothing for the local log."""
    if not is_kafka(bootstrap):
        return {}
    jars = jvm.fetched_jars(jvm.spark_kafka_jars_dir())
    if jars:
        return {"spark.jars": ",".join(jars)}
    return {"spark.jars.packages": jvm.spark_kafka_package()}


def fetched_jars_conf() -> dict[str, str]:
    """``spark.jars`` with the fetched Kafka source jars, if ``make jars`` ran; else {}."""
    jars = jvm.fetched_jars(jvm.spark_kafka_jars_dir())
    return {"spark.jars": ",".join(jars)} if jars else {}


def read_kafka_stream(spark: SparkSession, bootstrap: str, partitions: Mapping[str, int],
                      consumer_config: Mapping[str, Any] | None = None,
                      max_records_per_batch: int | None = None) -> DataFrame:
    """A streaming DataFrame of ``partitions`` (topic -> partition count) with the
    columns of streamlib's topic data source, read ``read_committed``."""
    servers = parse_url(bootstrap)[1] if "://" in bootstrap else bootstrap
    assign = {topic: list(range(n)) for topic, n in sorted(partitions.items())}
    earliest = {topic: {str(p): -2 for p in parts} for topic, parts in assign.items()}  # -2: earliest
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", servers)
              .option("assign", json.dumps(assign))
              .option("startingOffsets", json.dumps(earliest))
              .option("includeHeaders", "true")
              # Only committed transactions, like streamlib's own reader; the offsets
              # of aborted records and transaction markers are gaps, not data loss.
              .option("kafka.isolation.level", "read_committed")
              .option("failOnDataLoss", "false"))
    for key, value in _java_consumer_options(consumer_config or {}):
        reader = reader.option(f"kafka.{key}", value)
    if max_records_per_batch:
        reader = reader.option("maxOffsetsPerTrigger", str(max_records_per_batch))
    try:
        df = reader.load()
    except Exception as exc:  # py4j / AnalysisException: the provider is not on the classpath
        if "kafka" in str(exc).lower() and "find" in str(exc).lower():
            raise RuntimeError(
                f"Spark's Kafka source is not on this session's classpath: start Spark with "
                f"--packages {jvm.spark_kafka_package()} (or run `make jars` in a streamlib "
                f"checkout before the session is created)") from None
        raise
    return df.select(
        F.col("topic"), F.col("partition").cast("int").alias("partition"), F.col("offset"),
        F.unix_millis(F.col("timestamp")).alias("timestamp"), F.col("key"), F.col("value"),
        # Spark's source gives null where a record has no headers; ours an empty list.
        F.coalesce(F.col("headers"), F.array().cast(HEADERS_DDL))
        .alias("headers"))


def hit_progress_report_bug(exc: BaseException) -> bool:
    """Whether a query failed on Spark 4.1.1's SPARK-55271: Spark's Kafka source throws
    a NullPointerException while reporting the progress of the first batch after a
    restart when that batch re-runs one left uncommitted (``latestPartitionOffsets``
    is still unset). The batch itself has completed and committed by then, so
    restarting the query once goes on correctly."""
    text = str(exc)
    return "scala.Option.get()" in text and "is null" in text and "IterableOps.map" in text


def _java_consumer_options(config: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    for key, value in sorted(config.items()):
        if key not in _NOT_JAVA and not callable(value):
            yield key, str(value).lower() if isinstance(value, bool) else str(value)
