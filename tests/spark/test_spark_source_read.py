"""The ``streamlib`` source's read path: pruned schemas, split ranges, no pandas in workers."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from streamlib.topics import open_backend, records_to_arrow
from streamlib.spark.log_epochs import plain

from test_spark_source import fill


@pytest.fixture
def log(tmp_path):
    backend = open_backend(f"local://{tmp_path / 'log'}")
    yield backend
    backend.close()


def reader(spark, backend, topics: str, schema: str | None = None, **options):
    r = spark.read.format("streamlib").option("bootstrap", backend.url).option("topics", topics)
    if schema is not None:
        r = r.schema(schema)
    return r.options(**options).load()


def test_a_pruned_schema_reads_the_same_rows_as_the_full_schema(spark, log):
    fill(log, "a", [7, 0, 12])
    fill(log, "b", [5])
    full = reader(spark, log, "a,b")
    pruned = reader(spark, log, "a,b", "value binary, partition int, offset long, topic string")
    assert pruned.columns == ["value", "partition", "offset", "topic"]
    assert_df_equality(pruned, full.select("value", "partition", "offset", "topic"),
                       ignore_row_order=True)
    assert pruned.count() == 24


def test_a_schema_of_only_topic_and_partition_counts_every_record(spark, log):
    fill(log, "a", [3, 4])
    got = reader(spark, log, "a", "partition int").groupBy("partition").count()
    assert sorted(tuple(r) for r in got.collect()) == [(0, 3), (1, 4)]


def test_a_schema_with_an_unknown_column_or_another_type_is_refused(spark, log):
    fill(log, "t", [1])
    for schema in ("value string", "nope binary", "partition long"):
        with pytest.raises(Exception, match="the streamlib source has no column"):
            reader(spark, log, "t", schema).collect()


def test_a_streaming_read_with_a_pruned_schema_gets_every_record_once(spark, log, tmp_path):
    fill(log, "s", [9, 4])
    stream = (spark.readStream.format("streamlib").schema("offset long, value binary")
              .option("bootstrap", log.url).option("topics", "s").load())
    query = (stream.writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    got = spark.read.parquet(str(tmp_path / "out"))
    assert got.columns == ["offset", "value"]
    assert_df_equality(got, reader(spark, log, "s").select("offset", "value"), ignore_row_order=True)


def test_min_partitions_splits_a_large_range_into_ordered_pieces(spark, log):
    fill(log, "one", [40])
    split = reader(spark, log, "one", minPartitions="4")
    assert split.rdd.getNumPartitions() == 4
    assert_df_equality(split, reader(spark, log, "one"), ignore_row_order=True)
    pieces = (split.groupBy(F.spark_partition_id().alias("task"))
              .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"), F.count("*").alias("n"))
              .orderBy("task").collect())
    assert [(r.lo, r.hi, r.n) for r in pieces] == [(0, 9, 10), (10, 19, 10), (20, 29, 10), (30, 39, 10)]
    # Each task reads its piece in offset order.
    per_task = split.select(F.spark_partition_id().alias("task"), "offset").collect()
    assert [r.offset for r in per_task] == list(range(40))


def test_max_records_per_partition_splits_only_the_ranges_that_are_too_long(spark, log):
    fill(log, "t", [10, 3, 0])
    split = reader(spark, log, "t", maxRecordsPerPartition="4")
    assert split.rdd.getNumPartitions() == 3 + 1 + 1  # 10 -> 3 pieces, 3 -> 1, empty -> 1
    assert_df_equality(split, reader(spark, log, "t"), ignore_row_order=True)


def test_split_streaming_batches_keep_offsets_per_topic_partition(spark, log, tmp_path):
    fill(log, "s", [30, 5])
    checkpoint, out = str(tmp_path / "ck"), str(tmp_path / "out")

    def run() -> None:
        stream = (spark.readStream.format("streamlib").option("bootstrap", log.url).option("topics", "s")
                  .option("maxRecordsPerPartition", "7").load())
        query = (stream.writeStream.format("parquet").option("path", out)
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert query.exception() is None

    run()
    log.append("s", 1, records_to_arrow([(b"k", b"late", 9, ())] * 20))
    run()
    got = spark.read.parquet(out)
    assert_df_equality(got, reader(spark, log, "s"), ignore_row_order=True)
    assert got.count() == 55
    offsets_dir = os.path.join(checkpoint, "offsets")
    last = max(os.listdir(offsets_dir), key=lambda n: int(n) if n.isdigit() else -1)
    with open(os.path.join(offsets_dir, last)) as f:
        source_offsets = json.loads(f.read().splitlines()[-1])
    assert plain(source_offsets) == {"s": {"0": 30, "1": 25}}   # without the log epochs ("@epochs")


def test_min_records_per_partition_reads_small_ranges_together_in_offset_order(spark, log):
    fill(log, "t", [3, 4, 12, 2, 0, 5])
    grouped = reader(spark, log, "t", minRecordsPerPartition="6")
    # 3+4 reach 6; 12 alone; 2, the empty range and 5 are what is left
    assert grouped.rdd.getNumPartitions() == 3
    assert_df_equality(grouped, reader(spark, log, "t"), ignore_row_order=True)
    tasks = grouped.select(F.spark_partition_id().alias("task"), "partition", "offset").collect()
    assert [(r.task, r.partition, r.offset) for r in tasks] == (
        [(0, 0, o) for o in range(3)] + [(0, 1, o) for o in range(4)] + [(1, 2, o) for o in range(12)]
        + [(2, 3, o) for o in range(2)] + [(2, 5, o) for o in range(5)])


def test_a_micro_batch_reads_its_small_ranges_in_one_task_and_keeps_offsets_per_partition(log):
    from streamlib.spark.source import RangeGroup, SourceOptions, TopicRange, TopicStreamReader

    fill(log, "s", [3, 0, 2, 9])
    options = {"bootstrap": log.url, "topics": "s", "minRecordsPerPartition": "5"}
    stream = TopicStreamReader(SourceOptions.parse(options))
    start, end = stream.initialOffset(), stream.latestOffset()
    assert plain(end) == {"s": {"0": 3, "1": 0, "2": 2, "3": 9}}
    assert stream.partitions(start, end) == [
        RangeGroup((TopicRange("s", 0, 0, 3), TopicRange("s", 2, 0, 2))), TopicRange("s", 3, 0, 9)]
    rows = [row for part in stream.partitions(start, end) for batch in stream.read(part)
            for row in batch.to_pylist()]
    assert [(r["partition"], r["offset"]) for r in rows] == (
        [(0, o) for o in range(3)] + [(2, o) for o in range(2)] + [(3, o) for o in range(9)])


def test_min_records_per_partition_is_not_combined_with_splitting(spark, log):
    fill(log, "t", [1])
    with pytest.raises(Exception, match="minRecordsPerPartition reads whole ranges together"):
        reader(spark, log, "t", minRecordsPerPartition="5", minPartitions="2").collect()


@pytest.mark.parametrize("option", ["minPartitions", "maxRecordsPerPartition", "minRecordsPerPartition"])
def test_split_options_must_be_positive_integers(spark, log, option):
    fill(log, "t", [1])
    with pytest.raises(Exception, match=f"option {option} must be a positive integer"):
        reader(spark, log, "t", **{option: "0"}).collect()


def test_reading_the_log_for_spark_does_not_import_pandas(log, tmp_path):
    """pyarrow imports pandas on ``pa.array``/``pa.scalar``/``to_numpy``: half a second
    of CPU in every fresh Spark Python worker, for nothing on the read path."""
    fill(log, "t", [50, 0])
    log.compact("t")
    script = (
        "import sys\n"
        "from streamlib.spark.source import TopicRange, read_range\nfrom streamlib.topics.spec import BackendSpec\n"
        f"spec = BackendSpec({log.url!r})\n"
        "rows = sum(b.num_rows for p in (TopicRange('t', 0, 3, 40), TopicRange('t', 1, 0, 0),\n"
        "                                TopicRange('t', 0, 60, 70))\n"
        "           for b in read_range(spec, p))\n"
        "assert rows == 37, rows\n"
        "assert 'pandas' not in sys.modules, 'reading imported pandas'\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
