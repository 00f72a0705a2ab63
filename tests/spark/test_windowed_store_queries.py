"""``Streams.store()`` and ``Streams.table()`` of window and session stores after a run
through Spark: typed views over every task, and DataFrames with window bounds."""
from __future__ import annotations

from chispa import assert_df_equality

from streamlib import (Consumed, Materialized, Serdes, SessionWindows, StreamsBuilder, TimeWindows,
                       Window, Windowed)
from streamlib.processors.stores import SessionStoreView, WindowStoreView
from engine import Workspace

S = Serdes.string()
RECORDS = [("a", "x", 10), ("b", "x", 100), ("a", "x", 30_000), ("b", "x", 201), ("a", "x", 61_000)]


def topology():
    builder = StreamsBuilder()
    grouped = builder.stream("events", consumed=Consumed.with_(S, S)).group_by_key()
    grouped.windowed_by(TimeWindows.of(60_000, grace=120_000)).count(materialized=Materialized.as_("w"))
    grouped.windowed_by(SessionWindows.with_inactivity_gap(500, grace=120_000)).count(
        materialized=Materialized.as_("s"))
    return builder.build()


def test_store_and_table_of_window_and_session_stores(spark, tmp_path):
    workspace = Workspace(tmp_path)
    workspace.produce("events", RECORDS, partitions=2)
    app = workspace.run(spark, topology())
    try:
        windows, sessions = app.store("w"), app.store("s")
        assert isinstance(windows, WindowStoreView) and isinstance(sessions, SessionStoreView)
        assert windows.fetch("a", 0, 100_000) == [(0, 2), (60_000, 1)]
        assert windows.fetch("b", 0, 100_000) == [(0, 2)]
        assert sessions.fetch_sessions("b") == [(Windowed("b", Window(100, 201)), 2)]
        assert [w for w, _ in sessions.fetch_sessions("a")] == [
            Windowed("a", Window(10, 10)), Windowed("a", Window(30_000, 30_000)),
            Windowed("a", Window(61_000, 61_000))]
        expected = spark.createDataFrame(
            [("a", 0, 60_000, 2), ("a", 60_000, 120_000, 1), ("b", 0, 60_000, 2)],
            "key string, window_start bigint, window_end bigint, value bigint")
        assert_df_equality(app.table("w"), expected, ignore_row_order=True, ignore_nullable=True)
        expected_sessions = spark.createDataFrame(
            [("a", 10, 10, 1), ("a", 30_000, 30_000, 1), ("a", 61_000, 61_000, 1), ("b", 100, 201, 2)],
            "key string, window_start bigint, window_end bigint, value bigint")
        assert_df_equality(app.table("s"), expected_sessions, ignore_row_order=True, ignore_nullable=True)
        assert sorted(r.key for r in spark.sql("SELECT key FROM w WHERE value = 2").collect()) == ["a", "b"]
    finally:
        app.stop()
