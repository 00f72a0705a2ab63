"""A stateless first stage runs in the source's reader (``BatchPlan._reader_stage``):
the same results, metrics and sink appends as under ``mapInArrow``, and only where
the reader is the one place the stage's input comes from."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder
from streamlib.spark.lower import BatchPlan
from streamlib.spark.source import (READER_STAGE_OPTION, RangeGroup, SourceOptions, TopicBatchReader,
                                    TopicRange, with_combined_columns)
from streamlib.topics.spec import BackendSpec
from streamlib.spark.window_counts import OPTION as WINDOW_COUNTS_OPTION
from engine import Workspace, latest_per_key, python_count, wordcount_topology
from test_engine_spark import random_lines

S = Serdes.string()


@pytest.fixture
def ws(tmp_path):
    return Workspace(tmp_path)


def test_the_wordcount_split_runs_in_the_reader_and_every_read_task_reports(spark, ws):
    lines = random_lines(24_000, 11)
    ws.produce("lines", [(None, line) for line in lines], partitions=4)
    app = ws.run(spark, wordcount_topology(), max_records_per_batch=16_000)
    plan = app._plan
    assert plan.reader_stage is plan.stages[0] and plan.stages[0].udf is None
    assert plan.stages[1].udf is not None, "the count still runs under mapInArrow"
    expected = dict(python_count(lines))
    assert dict(app.store("counts").all()) == expected
    assert latest_per_key(ws.read("counts-out", value_serde=Serdes.long())) == expected
    # every read task's metrics reached the driver (one accumulator per Spark task)
    metrics = app.metrics()
    assert metrics["records_in"] == len(lines) + sum(expected.values())
    readers = [task for task in metrics["tasks"] if task.startswith("0_")]
    assert readers and all(metrics["tasks"][task]["records_in"] > 0 for task in readers)
    app.stop()


def upper_cased():
    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(S, S)).map_values(str.upper)
     .filter(lambda key, value: not value.startswith("X")).to("out", produced=Produced.with_(S, S)))
    return builder.build()


def test_a_rerun_batch_appends_its_sink_rows_once(spark, ws):
    # A stateless topology is one stage that the reader runs: it writes the sink itself,
    # idempotently per (read task, batch). The batch re-run after a crash before Spark's
    # commit is read by the same tasks, so every append is recognised as done.
    records = [(f"k{i}", f"v{i}" if i % 7 else f"x{i}") for i in range(12_000)]
    ws.produce("in", records, partitions=3)
    app = ws.run(spark, upper_cased(), max_records_per_batch=5_000)
    assert app._plan.reader_stage is app._plan.stages[0]
    last = app.metrics()["last_batch"]
    app.stop()
    expected = sorted((k, v.upper()) for k, v in records if not v.startswith("x"))
    assert sorted((k, v) for k, v, _ in ws.read("out")) == expected
    commits = Path(ws.config().resolved_checkpoint_location()) / "commits"
    for name in (str(last), f".{last}.crc"):  # as if the driver died before Spark's commit
        (commits / name).unlink()
    ws.produce("in", [("late", "one")], partitions=3)
    app = ws.run(spark, upper_cased())
    app.stop()
    assert sorted((k, v) for k, v, _ in ws.read("out")) == sorted(expected + [("late", "ONE")])


def _plan(spark, ws, topology) -> BatchPlan:
    return BatchPlan(spark, topology, ws.config(), BackendSpec(ws.bootstrap), 2)


def test_only_a_stateless_stage_that_alone_reads_the_topics_runs_in_the_reader(spark, ws):
    assert _plan(spark, ws, wordcount_topology()).reader_stage is not None
    # stateful from the source on: its tasks need their stores, under mapInArrow
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key().count(
        materialized=Materialized.as_("c"))
    assert _plan(spark, ws, builder.build()).reader_stage is None
    # Column steps run in the JVM, between the read and the stage
    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(S, S)).filter(F.col("value") != "")
     .map_values(str.upper).to("out"))
    assert _plan(spark, ws, builder.build()).reader_stage is None
    # two stages read topics: the source would be read (and the stage run) for each
    builder = StreamsBuilder()
    builder.stream("a", consumed=Consumed.with_(S, S)).map_values(str.upper).to("out-a")
    builder.stream("b", consumed=Consumed.with_(S, S)).group_by_key().count()
    assert _plan(spark, ws, builder.build()).reader_stage is None
    # Spark's own source reads Kafka
    plan = BatchPlan(spark, upper_cased(), ws.config(), BackendSpec("kafka://127.0.0.1:1"), 2)
    assert plan.reader_stage is None


def test_the_reader_stage_option_is_for_streaming_reads_alone(ws):
    ws.produce("in", [("a", "1")])
    options = SourceOptions.parse({"bootstrap": ws.bootstrap, "topics": "in", READER_STAGE_OPTION: "x"})
    with pytest.raises(ValueError, match="streaming reads only"):
        TopicBatchReader(options).partitions()
    with pytest.raises(ValueError, match="cannot be combined"):
        SourceOptions.parse({"bootstrap": ws.bootstrap, "topics": "in", READER_STAGE_OPTION: "x",
                             WINDOW_COUNTS_OPTION: "y"})


def test_a_read_task_knows_its_place_and_pads_uncombined_rows():
    group = RangeGroup((TopicRange("t", 0, 0, 5),), 3)
    assert group.index == 3
    batch = pa.RecordBatch.from_pydict({"topic": ["t"], "records": pa.array([2], pa.int64())})
    padded = with_combined_columns(batch)
    assert padded.schema.names == ["topic", "records", "weight"]
    assert padded.column("weight").null_count == 1
