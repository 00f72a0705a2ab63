"""Stateless steps as Spark Column expressions: same results as Python functions, in the JVM."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from streamlib import (Consumed, Materialized, Produced, Serdes, StreamsBuilder, TopologyError,
                       TopologyTestDriver)
from engine import Workspace, latest_per_key, python_count, words_of

LINES = ["Hello world, hello!", "the quick brown fox", "", "Fox fox FOX", "a b c a"]


def column_wordcount():
    builder = StreamsBuilder()
    (builder.stream("lines").flat_map_values(F.split(F.lower(F.col("value")), r"\W+"))
     .filter(F.col("value") != "").select_key(F.col("value")).group_by_key()
     .count(materialized=Materialized.as_("counts"))
     .to_stream().to("counts-out", produced=Produced.with_(Serdes.string(), Serdes.long())))
    return builder.build()


def test_column_wordcount_equals_python_count_and_skips_the_python_stage(spark, tmp_path):
    ws = Workspace(tmp_path)
    ws.produce("lines", [(None, line) for line in LINES], partitions=2)
    app = ws.run(spark, column_wordcount())
    expected = dict(python_count(LINES))
    assert dict(app.store("counts").all()) == expected
    assert latest_per_key(ws.read("counts-out", value_serde=Serdes.long())) == expected
    plan = app.explain()
    assert "explode(split(lower" in plan
    physical = plan.split("== Physical Plan ==")[1]
    # Python runs only in the stateful stage; with the default handler ('fail') rows the
    # JVM cannot decode raise in the JVM (spark/undecodable.py): the source is read once.
    assert physical.count("MapInArrow") == 1, "only the stateful stage runs Python"
    assert physical.count("Scan ") == 1, physical
    assert "raise_error" in physical
    app.stop()


def test_column_steps_mixed_with_python_steps_and_every_column_op(spark, tmp_path):
    ws = Workspace(tmp_path)
    ws.produce("in", [("k1", "apple pie"), ("k2", "banana"), (None, "cherry tart tart"), ("k4", "skip me")])
    builder = StreamsBuilder()
    (builder.stream("in")
     .filter_not(F.col("value").startswith("skip"))
     .map_values(F.upper(F.col("value")))
     .flat_map_values(F.split(F.col("value"), " "))
     .select_key(F.concat(F.coalesce(F.col("key"), F.lit("none")), F.lit(":"), F.col("value")))
     .map_values(lambda v: v.lower())            # a Python step after the JVM chain
     .to("out"))
    app = ws.run(spark, builder.build())
    assert sorted((k, v) for k, v, _ in ws.read("out")) == sorted([
        ("k1:APPLE", "apple"), ("k1:PIE", "pie"), ("k2:BANANA", "banana"),
        ("none:CHERRY", "cherry"), ("none:TART", "tart"), ("none:TART", "tart")])
    app.stop()


def test_long_values_from_a_column_are_kafka_longs(spark, tmp_path):
    ws = Workspace(tmp_path)
    ws.produce("in", [("a", "xyz"), ("b", "")])
    builder = StreamsBuilder()
    strings = Consumed.with_(Serdes.string(), Serdes.string())
    builder.stream("in", consumed=strings).map_values(F.length(F.col("value"))).to("lengths")
    app = ws.run(spark, builder.build(), default_value_serde=Serdes.long())
    assert sorted((k, v) for k, v, _ in ws.read("lengths", value_serde=Serdes.long())) == [("a", 3), ("b", 0)]
    app.stop()


def test_a_column_step_after_a_python_step_is_rejected_at_start(spark, tmp_path):
    ws = Workspace(tmp_path)
    ws.produce("in", [("a", "x")])
    builder = StreamsBuilder()
    builder.stream("in").map_values(str.upper).filter(F.col("value") != "").to("out")
    with pytest.raises(TopologyError, match=r"KSTREAM-FILTER-0000000002: a Spark Column step must follow a source"):
        ws.run(spark, builder.build())


def test_the_test_driver_names_a_column_step_it_cannot_run():
    with pytest.raises(TopologyError, match="KSTREAM-FLATMAPVALUES-0000000001 is a Spark Column expression"):
        TopologyTestDriver(column_wordcount())


def test_words_of_matches_the_column_split():
    # the Python model used above splits exactly like F.split(F.lower(value), "\\W+") minus ""
    assert words_of("Hello, world!! a_b") == ["hello", "world", "a_b"]
