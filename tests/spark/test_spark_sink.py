"""The ``streamlib`` Spark sink writing to the local log, and read→write queries."""
from __future__ import annotations

import os
import time

import pytest
from pyspark.sql import functions as F

from streamlib.topics import default_partitioner, open_backend, records_to_arrow


@pytest.fixture
def log(tmp_path):
    backend = open_backend(f"local://{tmp_path / 'log'}")
    yield backend
    backend.close()


def topic_records(backend, topic: str) -> list[tuple]:
    """(partition, key, value, timestamp, headers) of every record, in log order."""
    return [(r.partition, r.key, r.value, r.timestamp, r.headers)
            for p, end in sorted(backend.end_offsets(topic).items())
            for r in backend.read(topic, p, 0, end)]


def test_sink_partitions_like_the_java_producer(spark, log):
    log.create_topic("out", partitions=4)
    rows = [(f"key-{i}".encode(), f"v{i}".encode()) for i in range(200)] + [(None, b"no-key")] * 8
    df = spark.createDataFrame(rows, "key binary, value binary").repartition(3)
    df.write.format("streamlib").option("bootstrap", log.url).option("topic", "out").mode("append").save()
    written = topic_records(log, "out")
    def by_key(pairs):
        return sorted(pairs, key=lambda kv: (kv[0] or b"", kv[1]))

    assert by_key((k, v) for _, k, v, _, _ in written) == by_key(rows)
    for partition, key, *_ in written:
        if key is not None:
            assert partition == default_partitioner(key, 4)
    assert len({p for p, k, *_ in written if k is None}) > 1  # null keys are spread


def test_sink_columns_topic_partition_timestamp_headers(spark, log):
    log.create_topic("x", partitions=2)
    log.create_topic("y", partitions=3)
    df = spark.createDataFrame(
        [("x", 1, "k1", "a", 5, [("h", b"1")]), ("y", None, "k2", "b", None, None),
         ("y", 2, None, "c", 7, [])],
        "topic string, partition int, key string, value string, timestamp long, "
        "headers array<struct<key:string,value:binary>>")
    before = int(time.time() * 1000)
    df.write.format("streamlib").option("bootstrap", log.url).mode("append").save()
    assert topic_records(log, "x") == [(1, b"k1", b"a", 5, (("h", b"1"),))]
    (p_k2, k2, v2, ts2, h2), c = topic_records(log, "y")
    assert (p_k2, k2, v2, h2) == (default_partitioner(b"k2", 3), b"k2", b"b", ())
    assert before <= ts2 <= int(time.time() * 1000)
    assert c == (2, None, b"c", 7, ())


def test_batch_write_with_the_same_sequence_twice_does_not_duplicate(spark, log):
    log.create_topic("out", partitions=2)
    df = spark.createDataFrame([(f"k{i}".encode(), b"v") for i in range(50)], "key binary, value binary")
    writer = (df.repartition(2).write.format("streamlib").option("bootstrap", log.url)
              .option("topic", "out").option("sinkId", "job-1").mode("append"))
    writer.option("sequence", "7").save()
    writer.option("sequence", "7").save()
    assert sum(log.end_offsets("out").values()) == 50
    writer.option("sequence", "8").save()
    assert sum(log.end_offsets("out").values()) == 100


def test_sink_errors_name_the_problem(spark, log):
    df = spark.createDataFrame([(b"k", b"v")], "key binary, value binary")
    with pytest.raises(Exception, match="unknown topic 'missing'"):
        df.write.format("streamlib").option("bootstrap", log.url).option("topic", "missing") \
            .mode("append").save()
    log.create_topic("t")
    with pytest.raises(Exception, match="does not know column"):
        df.withColumn("extra", F.lit(1)).write.format("streamlib").option("bootstrap", log.url) \
            .option("topic", "t").mode("append").save()


def _fill_input(backend, partitions: int, per_partition: int) -> None:
    backend.create_topic("in", partitions=partitions)
    for p in range(partitions):
        backend.append("in", p, records_to_arrow(
            [(f"k{p}-{i}".encode(), f"v{p}-{i}".encode(), 10_000 + i,
              (("seq", str(i).encode()),) if i % 3 else ()) for i in range(per_partition)]))


def _start_copy(spark, backend, checkpoint: str, limit: int):
    source = (spark.readStream.format("streamlib").option("bootstrap", backend.url)
              .option("topics", "in").option("maxRecordsPerTrigger", str(limit)).load())
    return (source.select("key", "value", "timestamp", "headers").writeStream
            .format("streamlib").option("bootstrap", backend.url).option("topic", "out")
            .option("checkpointLocation", checkpoint).start())


def _input_as_output(backend) -> list[tuple]:
    """What copying ``in`` to ``out`` must produce (partition by key), as a sorted list."""
    n = backend.num_partitions("out")
    return sorted((default_partitioner(k, n), k, v, ts, h) for _, k, v, ts, h in topic_records(backend, "in"))


def test_stream_stopped_mid_way_and_restarted_writes_every_record_exactly_once(spark, log, tmp_path):
    _fill_input(log, partitions=2, per_partition=45)
    log.create_topic("out", partitions=2)
    checkpoint = str(tmp_path / "ckpt")
    query = _start_copy(spark, log, checkpoint, limit=30)
    deadline = time.time() + 120
    while not any(p["numInputRows"] for p in query.recentProgress) and time.time() < deadline:
        time.sleep(0.2)
    query.stop()
    done_first = sum(log.end_offsets("out").values())
    assert 0 < done_first < 90, "the first run should stop part-way"
    assert all(p["numInputRows"] <= 30 for p in query.recentProgress)

    query = _start_copy(spark, log, checkpoint, limit=30)
    query.processAllAvailable()
    log.append("in", 1, records_to_arrow([(b"live", b"tail", 1, ())] * 5))  # while it runs
    query.processAllAvailable()
    query.stop()
    assert query.exception() is None
    assert sorted(topic_records(log, "out")) == _input_as_output(log)
    assert sum(log.end_offsets("out").values()) == 95
    assert all(p["numInputRows"] <= 30 for p in query.recentProgress)  # the limit holds after restart


def test_rerun_of_an_uncommitted_batch_does_not_duplicate(spark, log, tmp_path):
    _fill_input(log, partitions=2, per_partition=30)
    log.create_topic("out", partitions=2)
    checkpoint = str(tmp_path / "ckpt")
    query = _start_copy(spark, log, checkpoint, limit=1_000)
    query.processAllAvailable()
    query.stop()
    assert sum(log.end_offsets("out").values()) == 60
    # Forget that batch 0 finished: Spark re-runs it with the same batch id on restart.
    for name in ("0", ".0.crc"):
        os.remove(os.path.join(checkpoint, "commits", name))
    query = _start_copy(spark, log, checkpoint, limit=1_000)
    query.processAllAvailable()
    query.stop()
    assert query.exception() is None
    assert [(p["batchId"], p["numInputRows"]) for p in query.recentProgress] == [(0, 60)]
    assert sorted(topic_records(log, "out")) == _input_as_output(log)
