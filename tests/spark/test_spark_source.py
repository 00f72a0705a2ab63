"""The ``streamlib`` Spark data source reading topics from the local log."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from pyspark.sql import functions as F

from streamlib.topics import open_backend, records_to_arrow


@pytest.fixture
def log(tmp_path):
    """A fresh local log; ``log.url`` is its bootstrap URL."""
    backend = open_backend(f"local://{tmp_path / 'log'}")
    yield backend
    backend.close()


def fill(backend, topic: str, counts: list[int]) -> None:
    """Create ``topic`` with one partition per entry of ``counts`` and that many
    distinct records in each (two appends per partition)."""
    backend.create_topic(topic, partitions=len(counts))
    for p, n in enumerate(counts):
        rows = [(f"{topic}-{p}-{i}".encode(), f"value-{i}".encode() * (i % 3), 1_000 * p + i,
                 (("i", str(i).encode()),) if i % 2 else ()) for i in range(n)]
        for chunk in (rows[: n // 2], rows[n // 2:]):
            if chunk:
                backend.append(topic, p, records_to_arrow(chunk))


def expected_rows(backend, topics: list[str]) -> list[tuple]:
    return sorted((r.topic, r.partition, r.offset, r.timestamp, r.key, r.value, r.headers)
                  for t in topics for p, end in backend.end_offsets(t).items()
                  for r in backend.read(t, p, 0, end))


def spark_rows(rows) -> list[tuple]:
    return sorted((r.topic, r.partition, r.offset, r.timestamp, r.key, r.value,
                   tuple((h.key, h.value) for h in r.headers)) for r in rows)


def read(spark, backend, topics: str, **options):
    reader = spark.read.format("streamlib").option("bootstrap", backend.url).option("topics", topics)
    return reader.options(**options).load()


def test_batch_read_returns_every_record_once_one_spark_partition_per_topic_partition(spark, log):
    fill(log, "a", [7, 0, 12])
    fill(log, "b", [5])
    df = read(spark, log, "a,b")
    assert df.rdd.getNumPartitions() == 4  # empty a/1 still has its (empty) partition
    rows = df.collect()
    assert spark_rows(rows) == expected_rows(log, ["a", "b"])
    assert len(rows) == 24
    layout = df.select(F.spark_partition_id(), "topic", "partition").distinct().collect()
    assert sorted(tuple(r) for r in layout) == [(0, "a", 0), (2, "a", 2), (3, "b", 0)]


def test_batch_read_offset_range_options(spark, log):
    fill(log, "t", [10, 10])
    df = read(spark, log, "t", startingOffsets=json.dumps({"t": {"0": 4}}),
              endingOffsets=json.dumps({"t": {"1": 3}}))
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(4, 10)] + [(1, o) for o in range(3)]
    assert read(spark, log, "t", startingOffsets="latest").count() == 0


def test_streaming_read_resumes_from_checkpoint_exactly_once(spark, log, tmp_path):
    fill(log, "s", [9, 4, 0])
    checkpoint = str(tmp_path / "ckpt")

    def run_available() -> list:
        stream = (spark.readStream.format("streamlib").option("bootstrap", log.url)
                  .option("topics", "s").load())
        path = str(tmp_path / "out")
        query = (stream.writeStream.format("parquet").option("path", path)
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert query.exception() is None
        return spark.read.parquet(path).collect()

    first = run_available()
    assert spark_rows(first) == expected_rows(log, ["s"])
    fill_more = records_to_arrow([(b"late", b"x", 5, ())] * 3)
    log.append("s", 2, fill_more)
    log.append("s", 0, fill_more)
    both = run_available()
    second = [r for r in both if r not in first]
    assert len(both) == len(first) + len(second)
    assert sorted((r.partition, r.offset) for r in second) == [(0, 9), (0, 10), (0, 11),
                                                               (2, 0), (2, 1), (2, 2)]
    assert spark_rows(both) == expected_rows(log, ["s"])


def test_streaming_batch_plans_a_read_task_only_for_partitions_with_new_records(log):
    """Like Spark's Kafka source: an empty range would still cost a Python read task."""
    from streamlib.spark.source import SourceOptions, TopicRange, TopicStreamReader

    fill(log, "s", [3, 0, 2, 1])
    reader = TopicStreamReader(SourceOptions.parse({"bootstrap": log.url, "topics": "s"}))
    start = reader.initialOffset()
    end = reader.latestOffset()
    assert reader.partitions(start, end) == [TopicRange("s", 0, 0, 3), TopicRange("s", 2, 0, 2),
                                             TopicRange("s", 3, 0, 1)]
    log.append("s", 2, records_to_arrow([(b"k", b"v", 5, ())]))
    later = reader.latestOffset()
    assert reader.partitions(end, later) == [TopicRange("s", 2, 2, 3)]
    assert reader.partitions(later, later) == []


def test_unknown_topic_is_named_in_the_error(spark, log):
    fill(log, "known", [1])
    with pytest.raises(Exception, match="unknown topic 'nope'"):
        read(spark, log, "known,nope").collect()
    with pytest.raises(Exception, match="unknown topic 'nope'"):
        spark.readStream.format("streamlib").option("bootstrap", log.url).option("topics", "nope").load()


def test_bad_options_are_reported(spark, log):
    fill(log, "t", [1])
    with pytest.raises(Exception, match="option 'topics' is required"):
        spark.read.format("streamlib").option("bootstrap", log.url).load().collect()
    with pytest.raises(Exception, match="maxRecordsPerTrigger must be a positive integer"):
        read(spark, log, "t", maxRecordsPerTrigger="0").collect()


def test_java_check_explains_a_missing_java_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "streamlib.spark.java_check"],
                          env={"PATH": str(tmp_path), "PYTHONPATH": os.getcwd()},
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == ("streamlib needs Java 17+: no `java` on PATH and JAVA_HOME unset; install "
                           "a JDK (e.g. apt-get install openjdk-17-jre-headless)\n")
