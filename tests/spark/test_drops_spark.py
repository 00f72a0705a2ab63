"""Drops per reason through Spark (issue 37): counted on executors and on the driver
(Column steps' observed metrics), merged into ``app.metrics()["drops"]`` and served at
``/metrics``; a year-9999 record beyond ``max_future_skew`` is skipped on the Column
path and on the Python path, moves no stream time, and later records are not dropped."""
from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families

from engine import Workspace, python_count
from streamlib import Consumed, Materialized, Serdes, StreamsBuilder, TimeWindows
from streamlib.query.metrics import ApplicationMetrics
from test_column_steps import column_wordcount

S, B = Serdes.string(), Serdes.bytes()
YEAR_9999 = 253402300799000
LAX = {"message.timestamp.after.max.ms": str(2 ** 62)}   # the log itself would refuse year 9999


def by_reason(metrics: dict) -> dict:
    return {reason: sum(nodes.values()) for reason, nodes in metrics["drops"].items()}


def scraped(app) -> dict:
    """``/metrics``' per-reason samples, as the endpoint renders them."""
    prometheus = ApplicationMetrics("app")
    prometheus.follow(app.metrics)
    families = {f.name: f for f in text_string_to_metric_families(prometheus.render().decode())}
    out: dict = {}
    for sample in families["streamlib_dropped_records_by_reason"].samples:
        out[sample.labels["reason"]] = out.get(sample.labels["reason"], 0) + sample.value
    return out


def test_column_steps_skip_undecodable_and_far_future_records(spark, tmp_path):
    ws = Workspace(tmp_path)
    ws.backend.create_topic("lines", partitions=2, config=LAX)
    now = int(time.time() * 1000)
    good = ["hello world", "the fox", "hello fox", "late fox"]
    ws.produce("lines", [(None, good[0].encode(), now), (None, b"caf\xe9", now),
                         (None, b"far future", YEAR_9999), (None, good[1].encode(), now),
                         (None, good[2].encode(), now + 1), (None, good[3].encode(), now + 2)],
               partitions=2, key_serde=B, value_serde=B)
    app = ws.run(spark, column_wordcount(), deserialization_exception_handler="log_and_continue",
                 max_future_skew=3_600_000)
    try:
        assert dict(app.store("counts").all()) == dict(python_count(good))
        metrics = app.metrics()
        assert by_reason(metrics) == {"deserialization_error": 1, "future_timestamp": 1}
        assert (metrics["dropped_records"], metrics["skipped_records"]) == (2, 2)
        assert metrics["stream_time"] < YEAR_9999
        assert scraped(app) == {"deserialization_error": 1, "future_timestamp": 1}
    finally:
        app.stop()


def test_python_path_drops_per_reason_and_far_future_records(spark, tmp_path):
    ws = Workspace(tmp_path)
    ws.backend.create_topic("events", partitions=2, config=LAX)
    now = int(time.time() * 1000)
    minute = now - now % 60_000
    ws.produce("events", [("a", "x", minute + 30_000), ("b", "x", YEAR_9999), (None, "x", minute),
                          ("a", "x", minute + 90_000), ("a", "x", minute + 1_000)])   # the last: late
    builder = StreamsBuilder()
    (builder.stream("events", consumed=Consumed.with_(S, S)).group_by_key()
     .windowed_by(TimeWindows.of(60_000, grace=0)).count(Materialized.as_("counts")))
    app = ws.run(spark, builder.build(), deserialization_exception_handler="log_and_continue",
                 max_future_skew=3_600_000)
    try:
        metrics = app.metrics()
        assert by_reason(metrics) == {"future_timestamp": 1, "null_key": 1, "late": 1}
        assert metrics["dropped_records"] == 3 and metrics["skipped_records"] == 1
        assert metrics["stream_time"] == minute + 90_000
        assert scraped(app) == {"future_timestamp": 1, "null_key": 1, "late": 1}
    finally:
        app.stop()
