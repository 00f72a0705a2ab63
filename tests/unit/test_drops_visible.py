"""Every drop is visible (issue 37, item 4): counted per reason and node in
``metrics()["drops"]`` (adding up to ``dropped_records``, and ``skipped_records`` for
what the handler skipped) and logged as one warning line naming the node, the reason
and the record's topic, partition and offset; and the topology's ``max_future_skew``
(item 3) sends a far-future record to the deserialization handler instead of moving
stream time."""
from __future__ import annotations

import struct

import pytest

from streamlib import (Consumed, Grouped, Materialized, Serdes, StreamsBuilder, StreamsConfig, TimeWindows,
                       TopologyTestDriver)
from streamlib.processors import drops
from streamlib.processors.base import ProcessingError

S, I = Serdes.string(), Serdes.integer()
YEAR_9999 = 253402300799000
HOUR = 3_600_000


@pytest.fixture(autouse=True)
def fresh_rate_limit(monkeypatch):
    monkeypatch.setattr(drops, "_last_drop_warning", {})


def driver(topology, wall_clock=0, **config) -> TopologyTestDriver:
    return TopologyTestDriver(topology, StreamsConfig(application_id="app", **config),
                              initial_wall_clock_time=wall_clock)


def windowed_count():
    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key()
     .windowed_by(TimeWindows.of(100, grace=0)).count(Materialized.as_("counts")))
    return builder.build()


def assert_visible(metrics: dict, reason: str, count: int, caplog, topic: str, partition: int, offset: int):
    """``count`` drops for ``reason`` at one node, the totals their sums, one log line."""
    by_node = metrics["drops"][reason]
    assert sum(by_node.values()) == count and len(by_node) == 1
    assert metrics["dropped_records"] == sum(n for nodes in metrics["drops"].values() for n in nodes.values())
    assert metrics["skipped_records"] == sum(sum(metrics["drops"].get(r, {}).values())
                                             for r in drops.SKIPPED_REASONS)
    (node,) = by_node
    lines = [r.getMessage() for r in caplog.records if r.name == "streamlib.drops" and f"reason {reason}" in r.getMessage()]
    assert len(lines) == 1, lines   # rate-limited: one line for the reason at the node
    assert lines[0].startswith(f"{node} dropped ")
    assert f"from topic {topic!r} partition {partition} offset {offset}" in lines[0]


def test_a_late_record_for_a_closed_window(caplog):
    with driver(windowed_count()) as d, caplog.at_level("WARNING", logger="streamlib.drops"):
        inp = d.create_input_topic("in", S, S)
        inp.pipe_input("a", "x", 250)
        inp.pipe_input("a", "x", 10)    # window [0, 100) closed at 100
        inp.pipe_input("b", "x", 20)
        assert_visible(d.metrics(), "late", 2, caplog, "in", 0, 1)


def test_a_null_key_in_an_aggregation(caplog):
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key().count(Materialized.as_("counts"))
    with driver(builder.build()) as d, caplog.at_level("WARNING", logger="streamlib.drops"):
        inp = d.create_input_topic("in", S, S)
        inp.pipe_input("a", "x", 1)
        inp.pipe_input(None, "x", 2)
        assert_visible(d.metrics(), "null_key", 1, caplog, "in", 0, 1)


def test_a_null_value_in_a_reduce(caplog):
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key().reduce(lambda a, b: a + b)
    with driver(builder.build()) as d, caplog.at_level("WARNING", logger="streamlib.drops"):
        inp = d.create_input_topic("in", S, S)
        inp.pipe_input("a", "x", 1)
        inp.pipe_input("a", None, 2)
        assert_visible(d.metrics(), "null_value", 1, caplog, "in", 0, 1)


def test_a_null_key_in_a_stream_table_join(caplog):
    builder = StreamsBuilder()
    table = builder.table("table", consumed=Consumed.with_(S, S))
    builder.stream("in", consumed=Consumed.with_(S, S)).join(table, lambda v, t: v + t).to("out")
    with driver(builder.build()) as d, caplog.at_level("WARNING", logger="streamlib.drops"):
        d.create_input_topic("table", S, S).pipe_input("a", "t", 1)
        inp = d.create_input_topic("in", S, S)
        inp.pipe_input("a", "x", 2)
        inp.pipe_input(None, "y", 3)
        assert d.create_output_topic("out", S, S).read_values_to_list() == ["xt"]
        assert_visible(d.metrics(), "null_key", 1, caplog, "in", 0, 1)


def passthrough():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, I)).to("out")
    return builder.build()


def test_a_record_the_deserialization_handler_skips(caplog):
    with driver(passthrough(), deserialization_exception_handler="log_and_continue") as d, \
            caplog.at_level("WARNING", logger="streamlib.drops"):
        inp = d.create_input_topic("in", S, Serdes.bytes())
        inp.pipe_input("a", struct.pack(">i", 1), 1)
        inp.pipe_input("b", b"xyz", 2)
        assert d.create_output_topic("out", S, I).read_values_to_list() == [1]
        metrics = d.metrics()
        assert metrics["skipped_records"] == 1
        assert_visible(metrics, "deserialization_error", 1, caplog, "in", 0, 1)


def test_a_dead_lettered_record(caplog):
    with driver(passthrough(), deserialization_exception_handler="dead_letter") as d, \
            caplog.at_level("WARNING", logger="streamlib.drops"):
        inp = d.create_input_topic("in", S, Serdes.bytes())
        inp.pipe_input("b", b"xyz", 2)
        metrics = d.metrics()
        assert (metrics["dead_letter_records"], metrics["skipped_records"]) == (1, 0)
        assert_visible(metrics, "dead_letter", 1, caplog, "in", 0, 0)


def test_an_extractors_negative_timestamp(caplog):
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S, timestamp_extractor=lambda k, v, ts: -1)).to("out")
    with driver(builder.build()) as d, caplog.at_level("WARNING", logger="streamlib.drops"):
        d.create_input_topic("in", S, S).pipe_input("a", "x", 5)
        assert_visible(d.metrics(), "invalid_timestamp", 1, caplog, "in", 0, 0)


def test_the_warning_is_rate_limited_but_every_drop_counted(caplog):
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key().count(Materialized.as_("counts"))
    with driver(builder.build()) as d, caplog.at_level("WARNING", logger="streamlib.drops"):
        inp = d.create_input_topic("in", S, S)
        for offset in range(5):
            inp.pipe_input(None, "x", offset)
        assert_visible(d.metrics(), "null_key", 5, caplog, "in", 0, 0)


# -- max_future_skew -----------------------------------------------------------------------

NOW = 1_700_000_000_000


def test_a_far_future_record_is_skipped_and_does_not_move_stream_time(caplog):
    with driver(windowed_count(), wall_clock=NOW, max_future_skew=HOUR,
                deserialization_exception_handler="log_and_continue") as d, \
            caplog.at_level("WARNING", logger="streamlib.drops"):
        inp = d.create_input_topic("in", S, S)
        inp.pipe_input("a", "x", NOW - 1000)
        inp.pipe_input("a", "x", YEAR_9999)
        inp.pipe_input("a", "x", NOW - 950)        # not late: stream time stayed
        assert dict(d.get_window_store("counts").fetch("a", 0, NOW)) == {NOW - 1000: 2}
        inp.pipe_input("a", "x", NOW + HOUR)       # within the skew
        metrics = d.metrics()
        assert metrics["stream_time"] == NOW + HOUR
        assert metrics["records_in"] == 3 and metrics["skipped_records"] == 1
        assert_visible(metrics, "future_timestamp", 1, caplog, "in", 0, 1)
        assert "max_future_skew" in caplog.text


def test_a_far_future_record_fails_the_task_by_default():
    with driver(passthrough(), wall_clock=NOW, max_future_skew=HOUR) as d:
        inp = d.create_input_topic("in", S, I)
        inp.pipe_input("a", 1, NOW)
        with pytest.raises(ProcessingError, match="refusing the record at topic 'in' partition 0 offset 1 .*"
                                                  "max_future_skew"):
            inp.pipe_input("a", 2, YEAR_9999)


def test_a_far_future_record_goes_to_the_dead_letter_topic():
    with driver(passthrough(), wall_clock=NOW, max_future_skew=HOUR,
                deserialization_exception_handler="dead_letter") as d:
        inp = d.create_input_topic("in", S, I)
        inp.pipe_input("a", 2, YEAR_9999)
        inp.pipe_input("a", 1, NOW)
        assert d.create_output_topic("out", S, I).read_values_to_list() == [1]
        dead = d.create_output_topic("app-dlq", S, I).read_records_to_list()
        assert [(r.value, r.timestamp) for r in dead] == [(2, YEAR_9999)]
        assert b"max_future_skew" in dead[0].headers["streamlib.error"]
        assert d.metrics()["drops"] == {"dead_letter": {"KSTREAM-SOURCE-0000000000": 1}}


def test_without_a_limit_a_far_future_record_moves_stream_time():
    with driver(windowed_count(), wall_clock=NOW) as d:
        d.create_input_topic("in", S, S).pipe_input("a", "x", YEAR_9999)
        assert d.metrics()["stream_time"] == YEAR_9999


def test_the_limit_is_checked_on_the_batch_paths_too():
    """A stateless chain runs over whole columns (runtime/fused.py): a batch with a
    far-future record falls back to record by record, which sends it to the handler."""
    from streamlib.runtime.task import Task
    import pyarrow as pa

    config = StreamsConfig(application_id="app", max_future_skew=HOUR,
                           deserialization_exception_handler="log_and_continue")
    topology = passthrough()
    task = Task(topology, topology.subtopologies[0], 0, config)
    task.begin(None, 1, wall_clock=NOW)
    rows = pa.table({"topic": ["in"] * 3, "partition": pa.array([0] * 3, pa.int32()),
                     "offset": [0, 1, 2], "timestamp": [NOW, YEAR_9999, NOW + 1],
                     "key": [b"a", b"b", b"c"], "value": [struct.pack(">i", i) for i in range(3)],
                     "headers": pa.array([[]] * 3, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))})
    task.process_table(rows)
    task.commit()
    assert [row[3] for row in task.take_output()] == [b"a", b"c"]
    assert task.context.stream_time == NOW + 1
    assert task.metrics["drops"] == {"future_timestamp": {"KSTREAM-SOURCE-0000000000": 1}}


def test_max_future_skew_must_not_be_negative():
    with pytest.raises(ValueError, match="max_future_skew"):
        StreamsConfig(max_future_skew=-1)


def test_metrics_serves_the_drops_per_reason_and_node():
    from prometheus_client.parser import text_string_to_metric_families

    from streamlib.query.metrics import ApplicationMetrics

    prometheus = ApplicationMetrics("app")
    prometheus.follow(lambda: {"dropped_records": 5, "skipped_records": 1,
                               "drops": {"late": {"w": 3, "s": 1}, "future_timestamp": {"src": 1}}})
    families = {f.name: f for f in text_string_to_metric_families(prometheus.render().decode())}
    samples = {(s.labels["reason"], s.labels["node"]): s.value
               for s in families["streamlib_dropped_records_by_reason"].samples if s.name.endswith("_total")}
    assert samples == {("late", "w"): 3, ("late", "s"): 1, ("future_timestamp", "src"): 1}
    assert families["streamlib_dropped_records_by_reason"].type == "counter"
    assert sum(samples.values()) == 5


def test_drops_merge_across_tasks():
    total: dict = {}
    drops.add_drops(total, {"late": {"w": 2}})
    drops.add_drops(total, {"late": {"w": 1, "s": 4}, "null_key": {"a": 1}})
    drops.add_drops(total, None)
    assert total == {"late": {"w": 3, "s": 4}, "null_key": {"a": 1}}


def test_an_unknown_reason_is_a_bug_not_a_new_metric():
    with pytest.raises(ValueError, match="unknown drop reason"):
        drops.count_drop({}, "n", "lost")
