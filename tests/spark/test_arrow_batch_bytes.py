"""Spark 4 checks an Arrow batch's size in bytes after every row it hands a Python task
unless ``spark.sql.execution.arrow.maxBytesPerBatch`` is Int.MaxValue. streamlib sets
that on its query's own session only, and keeps a value the user set."""
from __future__ import annotations

import json

import pytest
from pyspark import TaskContext

from streamlib import Consumed, Materialized, Serdes, Streams, StreamsBuilder
from streamlib.spark.lower import ARROW_MAX_BYTES
from engine import Workspace

KEY, UNCHECKED = ARROW_MAX_BYTES


def counting_app(spark, tmp_path) -> Streams:
    """A count whose tasks write down the limit their Spark task ran with."""
    ws = Workspace(tmp_path)
    ws.produce("in", [("k", "a"), ("k", "b"), ("j", "a")], partitions=2)
    seen = tmp_path / "seen"

    def note(key, value):
        with open(seen, "a") as out:
            out.write(json.dumps(TaskContext.get().getLocalProperty(KEY)) + "\n")

    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(Serdes.string(), Serdes.string())).peek(note)
     .group_by(lambda key, value: value).count(materialized=Materialized.as_("counts")))
    return Streams(builder.build(), ws.config(), spark=spark)


def task_settings(tmp_path) -> set:
    return {json.loads(line) for line in (tmp_path / "seen").read_text().splitlines()}


@pytest.fixture
def restored_setting(spark):
    before = spark.conf.get(KEY, None)
    yield
    if before is None:
        spark.conf.unset(KEY)
    else:
        spark.conf.set(KEY, before)


def test_the_query_session_skips_the_per_row_size_check_and_the_users_session_is_untouched(
        spark, tmp_path, restored_setting):
    spark.conf.unset(KEY)
    app = counting_app(spark, tmp_path)
    app.process_available()
    try:
        assert app.store("counts").get("a") == 2
        assert task_settings(tmp_path) == {UNCHECKED}
        assert spark.conf.get(KEY, None) is None
    finally:
        app.stop()


def test_a_limit_the_user_set_is_kept(spark, tmp_path, restored_setting):
    spark.conf.set(KEY, "1048576")
    app = counting_app(spark, tmp_path)
    app.process_available()
    try:
        assert app.store("counts").get("a") == 2
        assert task_settings(tmp_path) == {"1048576"}
    finally:
        app.stop()
