"""Differences the Kafka Streams oracle (tests/oracle/test_oracle.py) found, each reduced to a
minimal TopologyTestDriver case with Kafka Streams 4.3.1's output as the expectation."""
from __future__ import annotations

from streamlib import (EmitStrategy, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder,
                       StreamsConfig, TopologyTestDriver)

S, L = Serdes.string(), Serdes.long()


def _session_counts(emit_final: bool) -> TopologyTestDriver:
    builder = StreamsBuilder()
    windowed = builder.stream("in").group_by_key().windowed_by(
        SessionWindows.with_inactivity_gap(5, grace=3))
    if emit_final:
        windowed = windowed.emit_strategy(EmitStrategy.on_window_close())
    (windowed.count().to_stream(mapper=lambda wk, v: f"{wk.key}@{wk.window.start}/{wk.window.end}")
     .to("out", produced=Produced.with_(S, L)))
    return TopologyTestDriver(builder.build(), StreamsConfig(application_id="regressions"))


def _records(driver: TopologyTestDriver, pipes: list[tuple], topics=("in",), out_serde=L) -> list[tuple]:
    inputs = {t: driver.create_input_topic(t, S, S) for t in topics}
    out = driver.create_output_topic("out", S, out_serde)
    for topic, key, value, ts in pipes:
        inputs[topic].pipe_input(key, value, ts)
    return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


def test_session_ending_at_store_time_minus_retention_is_not_merged():
    """Oracle scenario ``session-count``: Kafka's session stores hide sessions ending at or
    before (largest session end put) − retention (gap + grace = 8) from
    ``findSessions`` at once (``getActualFrom``). c@10/10 is still open (stream time 18,
    close time 10) but invisible to c@15, which merges with c@18/18 only."""
    driver = _session_counts(False)
    try:
        got = _records(driver, [("in", "c", "1", 18), ("in", "c", "1", 10), ("in", "c", "1", 15)])
    finally:
        driver.close()
    assert got == [("c@18/18", 1, 18), ("c@10/10", 1, 10), ("c@18/18", None, 18), ("c@15/18", 2, 18)]


def test_session_invisible_to_merge_is_replaced_under_emit_final():
    """Oracle scenario ``session-count-emit-final``: a@38/38 written at store time 46 is
    invisible to the next a@38 (38 <= 46 − 8), which starts the session afresh: its final
    count is 1, not 2."""
    driver = _session_counts(True)
    try:
        got = _records(driver, [("in", "a", "1", 36), ("in", "b", "1", 46), ("in", "a", "1", 46),
                                ("in", "a", "1", 38), ("in", "a", "1", 38), ("in", "b", "1", 60)])
    finally:
        driver.close()
    assert got == [("a@36/36", 1, 36), ("a@38/38", 1, 38), ("a@46/46", 1, 46), ("b@46/46", 1, 46)]


def test_emit_final_sessions_ending_together_come_by_start():
    """Oracle scenario ``session-count-emit-final``: Kafka's time-ordered session store
    keys sessions by end, start, key, so sessions closing together are emitted by start
    (c@16/20 before b@17/20), not by key."""
    driver = _session_counts(True)
    try:
        got = _records(driver, [("in", "b", "1", 17), ("in", "b", "1", 20), ("in", "c", "1", 16),
                                ("in", "c", "1", 20), ("in", "a", "1", 29)])
    finally:
        driver.close()
    assert got == [("c@16/20", 2, 20), ("b@17/20", 2, 20)]


def _fk_join(left: bool) -> TopologyTestDriver:
    builder = StreamsBuilder()
    this = builder.table("in", materialized=Materialized.as_("this"))
    other = builder.table("in2", materialized=Materialized.as_("other"))
    join = this.left_join if left else this.join
    (join(other, lambda a, b: f"{a}+{'-' if b is None else b}", foreign_key_extractor=lambda v: v[0])
     .to_stream().to("out", produced=Produced.with_(S, S)))
    return TopologyTestDriver(builder.build(), StreamsConfig(application_id="regressions"))


def test_fk_inner_join_update_with_same_unmatched_foreign_key_emits_nothing():
    """Oracle scenario ``fk-join``: Kafka 4.x subscribes an update whose foreign key did
    not change with PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE: no match then means no match
    before either, so no tombstone is emitted."""
    driver = _fk_join(False)
    try:
        got = _records(driver, [("in", "c", "d9", 3), ("in", "c", "d6", 3), ("in2", "a", "w", 4)],
                       topics=("in", "in2"), out_serde=S)
    finally:
        driver.close()
    assert got == []


def test_fk_left_join_foreign_key_change_emits_one_result():
    """Oracle scenario ``fk-left-join``: Kafka 4.x unsubscribes the old foreign key with
    DELETE_KEY_NO_PROPAGATE, so a changed foreign key yields only the new result (not
    that result twice)."""
    driver = _fk_join(True)
    try:
        got = _records(driver, [("in", "a", "c6", 47), ("in", "a", "d7", 48)], topics=("in", "in2"), out_serde=S)
    finally:
        driver.close()
    assert got == [("a", "c6+-", 47), ("a", "d7+-", 48)]
