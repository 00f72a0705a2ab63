"""Session windows, ported from Kafka Streams'
``streams/src/test/java/org/apache/kafka/streams/kstream/internals/SessionWindowedKStreamImplTest.java``
and ``KStreamSessionWindowAggregateProcessorTest.java``.

Kafka's rules these pin: a record at t joins every session of its key that ends at or
after t - gap and starts at or before t + gap; the merged sessions are removed and emitted
as tombstones (timestamp = the removed session's end) before the merged session (timestamp
= its end); a record whose merged session ends before stream time - grace - gap is dropped
and counted. Our driver emits every update (Kafka's non-cached store); where Kafka checks a
cached store's flushed results the uncached records are spelled out and said so. The
old/new ``Change`` pairs become new values (to_stream). (Tests pending the windowed DSL.)
"""
import pytest

from streamlib import (Consumed, EmitStrategy, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder,
                       Window, Windowed)

from streams_helpers import L, S, driver_for, kvt
from windowed_helpers import string_adder, string_init

UPDATE, CLOSE = EmitStrategy.on_window_update(), EmitStrategy.on_window_close()
STRATEGIES = pytest.mark.parametrize("emit", [UPDATE, CLOSE], ids=["on_update", "on_close"])
SW = Serdes.session_windowed(S)
GAP_MS = 5 * 60 * 1000
DATA = [("1", "1", 10), ("1", "2", 15), ("1", "3", 600), ("2", "1", 600), ("2", "2", 599)]


def sw(key, start, end):
    return Windowed(key, Window(start, end))


def merger(key, agg1, agg2):
    """SessionWindowedKStreamImplTest.sessionMerger: aggOne + "+" + aggTwo."""
    return f"{agg1}+{agg2}"


def _session_stream(builder, gap=500, grace=0, emit=UPDATE):
    return builder.stream("input", consumed=Consumed.with_(S, S)).group_by_key() \
        .windowed_by(SessionWindows.with_inactivity_gap(gap, grace=grace)).emit_strategy(emit)


def _run(builder, records, table=None, value_serde=L, store=None):
    if table is not None:
        table.to_stream().to("out", produced=Produced.with_(SW, value_serde))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        for k, v, ts in records:
            inp.pipe_input(k, v, ts)
        out = kvt(driver.create_output_topic("out", SW, value_serde).read_records_to_list()) if table is not None else None
        sessions = None
        if store is not None:
            ss = driver.get_session_store(store)
            sessions = {k: list(ss.fetch_sessions(k)) for k in sorted({r[0] for r in records if r[0] is not None})}
        return out, sessions, driver.metrics()["dropped_records"]


# --- SessionWindowedKStreamImplTest ------------------------------------------------------------

@STRATEGIES
def test_count_session_windowed(emit):
    """SessionWindowedKStreamImplTest.shouldCountSessionWindowedWithCachingDisabled (and ...Enabled,
    whose results are the same under the driver): 1@15 merges [10,10] (tombstone at 10); 2@599
    merges [600,600] into [599,600] stamped with the session end 600."""
    builder = StreamsBuilder()
    out, _, _ = _run(builder, DATA, _session_stream(builder, emit=emit).count())
    if emit == CLOSE:
        assert out == [(sw("1", 10, 15), 2, 15)]
    else:
        assert out == [(sw("1", 10, 10), 1, 10), (sw("1", 10, 10), None, 10), (sw("1", 10, 15), 2, 15),
                       (sw("1", 600, 600), 1, 600), (sw("2", 600, 600), 1, 600), (sw("2", 600, 600), None, 600),
                       (sw("2", 599, 600), 2, 600)]


@STRATEGIES
def test_reduce_session_windowed(emit):
    """SessionWindowedKStreamImplTest.shouldReduceWindowed"""
    builder = StreamsBuilder()
    out, _, _ = _run(builder, DATA, _session_stream(builder, emit=emit).reduce(lambda a, b: f"{a}+{b}"), S)
    if emit == CLOSE:
        assert out == [(sw("1", 10, 15), "1+2", 15)]
    else:
        assert out == [(sw("1", 10, 10), "1", 10), (sw("1", 10, 10), None, 10), (sw("1", 10, 15), "1+2", 15),
                       (sw("1", 600, 600), "3", 600), (sw("2", 600, 600), "1", 600),
                       (sw("2", 600, 600), None, 600), (sw("2", 599, 600), "1+2", 600)]


@STRATEGIES
def test_aggregate_session_windowed(emit):
    """SessionWindowedKStreamImplTest.shouldAggregateSessionWindowed: a merge starts from the
    initializer, merges each overlapping session in (merger), then applies the aggregator:
    "0" + "0+1" -> "0+0+1" -> "0+0+1+2"."""
    builder = StreamsBuilder()
    table = _session_stream(builder, emit=emit).aggregate(string_init, string_adder, merger,
                                                          materialized=Materialized.with_(S, S))
    out, _, _ = _run(builder, DATA, table, S)
    if emit == CLOSE:
        assert out == [(sw("1", 10, 15), "0+0+1+2", 15)]
    else:
        assert out == [(sw("1", 10, 10), "0+1", 10), (sw("1", 10, 10), None, 10),
                       (sw("1", 10, 15), "0+0+1+2", 15), (sw("1", 600, 600), "0+3", 600),
                       (sw("2", 600, 600), "0+1", 600), (sw("2", 600, 600), None, 600),
                       (sw("2", 599, 600), "0+0+1+2", 600)]


def _materialized_sessions(emit, make_table, name):
    builder = StreamsBuilder()
    make_table(_session_stream(builder, emit=emit), Materialized.as_(name))
    return _run(builder, DATA, store=name)[1]


@STRATEGIES
def test_materialize_count(emit):
    """SessionWindowedKStreamImplTest.shouldMaterializeCount: on close, the emitted (and expired,
    retention = gap + grace) session [10,15] is no longer in the store."""
    sessions = _materialized_sessions(emit, lambda s, m: s.count(materialized=m.with_value_serde(L)), "count-store")
    first = [] if emit == CLOSE else [(sw("1", 10, 15), 2)]
    assert sessions == {"1": first + [(sw("1", 600, 600), 1)], "2": [(sw("2", 599, 600), 2)]}


@STRATEGIES
def test_materialize_reduced(emit):
    """SessionWindowedKStreamImplTest.shouldMaterializeReduced"""
    sessions = _materialized_sessions(
        emit, lambda s, m: s.reduce(lambda a, b: f"{a}+{b}", materialized=m.with_value_serde(S)), "reduced")
    first = [] if emit == CLOSE else [(sw("1", 10, 15), "1+2")]
    assert sessions == {"1": first + [(sw("1", 600, 600), "3")], "2": [(sw("2", 599, 600), "1+2")]}


@STRATEGIES
def test_materialize_aggregated(emit):
    """SessionWindowedKStreamImplTest.shouldMaterializeAggregated"""
    sessions = _materialized_sessions(
        emit, lambda s, m: s.aggregate(string_init, string_adder, merger, materialized=m.with_value_serde(S)),
        "aggregated")
    first = [] if emit == CLOSE else [(sw("1", 10, 15), "0+0+1+2")]
    assert sessions == {"1": first + [(sw("1", 600, 600), "0+3")], "2": [(sw("2", 599, 600), "0+0+1+2")]}


# --- KStreamSessionWindowAggregateProcessorTest (gap 5 minutes, count) ------------------------

def _count(records, emit=UPDATE, gap=GAP_MS, grace=0, retention=0):
    builder = StreamsBuilder()
    table = _session_stream(builder, gap=gap, grace=grace, emit=emit).count(
        materialized=Materialized.as_("session-store").with_value_serde(L).with_retention(retention))
    return _run(builder, records, table, L, store="session-store")


@STRATEGIES
def test_single_session_when_within_gap(emit):
    """KStreamSessionWindowAggregateProcessorTest.shouldCreateSingleSessionWhenWithinGap"""
    _, sessions, _ = _count([("john", "first", 0), ("john", "second", 500)], emit)
    assert sessions == {"john": [(sw("john", 0, 500), 2)]}


@STRATEGIES
def test_merge_sessions(emit):
    """KStreamSessionWindowAggregateProcessorTest.shouldMergeSessions: a record between two
    sessions within the gap of both merges all three into one."""
    # Kafka's test store keeps sessions 3 x gap: under the default (gap + grace) [0,0] would be gone
    _, sessions, _ = _count([("mel", "first", 0), ("mel", "second", GAP_MS + 1), ("mel", "third", GAP_MS // 2)],
                            emit, retention=3 * GAP_MS)
    assert sessions == {"mel": [(sw("mel", 0, GAP_MS + 1), 3)]}


@STRATEGIES
def test_update_session_if_the_same_time(emit):
    """KStreamSessionWindowAggregateProcessorTest.shouldUpdateSessionIfTheSameTime"""
    _, sessions, _ = _count([("mel", "first", 0), ("mel", "second", 0)], emit)
    assert sessions == {"mel": [(sw("mel", 0, 0), 2)]}


@STRATEGIES
def test_multiple_sessions_for_same_id_when_apart_by_gap(emit):
    """KStreamSessionWindowAggregateProcessorTest.shouldHaveMultipleSessionsForSameIdWhenTimestampApartBySessionGap.
    On close: Kafka's expectation verbatim. On update: Kafka checks a cached store's flushed
    results; uncached, each update is emitted (a record at a session's own single timestamp
    replaces it without a tombstone)."""
    now = 2 * (GAP_MS + 1)
    records = [("mel", "first", 0)] + [("mel", "second", GAP_MS + 1)] * 2 + [("mel", "third", now)] * 3
    out, _, _ = _count(records, emit)
    if emit == CLOSE:
        assert out == [(sw("mel", 0, 0), 1, 0), (sw("mel", GAP_MS + 1, GAP_MS + 1), 2, GAP_MS + 1)]
    else:
        assert out == [(sw("mel", 0, 0), 1, 0), (sw("mel", GAP_MS + 1, GAP_MS + 1), 1, GAP_MS + 1),
                       (sw("mel", GAP_MS + 1, GAP_MS + 1), 2, GAP_MS + 1), (sw("mel", now, now), 1, now),
                       (sw("mel", now, now), 2, now), (sw("mel", now, now), 3, now)]


@STRATEGIES
def test_remove_merged_sessions_from_state_store(emit):
    """KStreamSessionWindowAggregateProcessorTest.shouldRemoveMergedSessionsFromStateStore"""
    _, sessions, _ = _count([("a", "1", 0)], emit)
    assert sessions == {"a": [(sw("a", 0, 0), 1)]}
    _, sessions, _ = _count([("a", "1", 0), ("a", "2", 100)], emit)
    assert sessions == {"a": [(sw("a", 0, 100), 2)]}


@STRATEGIES
def test_multiple_sessions_and_merging(emit):
    """KStreamSessionWindowAggregateProcessorTest.shouldHandleMultipleSessionsAndMerging. On close:
    Kafka's expectation verbatim (sessions closed by the same record come out by end, then key).
    On update: the uncached records (Kafka checks a cached flush), tombstones included."""
    g = GAP_MS
    records = [("a", "1", 0), ("b", "1", 0), ("c", "1", 0), ("d", "1", 0), ("d", "2", g // 2),
               ("a", "2", g + 1), ("b", "2", g + 1), ("a", "3", g + 1 + g // 2), ("c", "3", g + 1 + g // 2)]
    out, _, _ = _count(records, emit)
    if emit == CLOSE:
        assert out == [(sw("a", 0, 0), 1, 0), (sw("b", 0, 0), 1, 0), (sw("c", 0, 0), 1, 0),
                       (sw("d", 0, g // 2), 2, g // 2)]
    else:
        assert out == [(sw("a", 0, 0), 1, 0), (sw("b", 0, 0), 1, 0), (sw("c", 0, 0), 1, 0), (sw("d", 0, 0), 1, 0),
                       (sw("d", 0, 0), None, 0), (sw("d", 0, g // 2), 2, g // 2),
                       (sw("a", g + 1, g + 1), 1, g + 1), (sw("b", g + 1, g + 1), 1, g + 1),
                       (sw("a", g + 1, g + 1), None, g + 1), (sw("a", g + 1, g + 1 + g // 2), 2, g + 1 + g // 2),
                       (sw("c", g + 1 + g // 2, g + 1 + g // 2), 1, g + 1 + g // 2)]


def test_immediately_forward_new_session_when_non_cached_store():
    """KStreamSessionWindowAggregateProcessorTest.shouldImmediatelyForwardNewSessionWhenNonCachedStore"""
    out, _, _ = _count([("a", "1", 0), ("b", "1", 0), ("c", "1", 0)])
    assert out == [(sw("a", 0, 0), 1, 0), (sw("b", 0, 0), 1, 0), (sw("c", 0, 0), 1, 0)]


def test_immediately_forward_removed_sessions_when_merging():
    """KStreamSessionWindowAggregateProcessorTest.shouldImmediatelyForwardRemovedSessionsWhenMerging:
    the merged-away session is deleted downstream (tombstone at its end) before the merged one."""
    out, _, _ = _count([("a", "1", 0), ("a", "1", 5)])
    assert out == [(sw("a", 0, 0), 1, 0), (sw("a", 0, 0), None, 0), (sw("a", 0, 5), 2, 5)]


@STRATEGIES
def test_skips_and_counts_null_keys(emit):
    """KStreamSessionWindowAggregateProcessorTest.shouldLogAndMeterWhenSkippingNullKeyWithBuiltInMetrics"""
    out, _, dropped = _count([(None, "1", 0)], emit)
    assert out == [] and dropped == 1


def test_skips_late_record_with_zero_grace():
    """KStreamSessionWindowAggregateProcessorTest.shouldLogAndMeterWhenSkippingLateRecordWithZeroGrace:
    gap 10, grace 0; at stream time 11 the close time is 11 - 0 - 10 = 1 and a new session
    [0,0] ends before it: dropped."""
    records = [("dummy", "dummy", 0), ("OnTime1", "1", 0), ("dummy", "dummy", 11), ("Late1", "1", 0)]
    out, _, dropped = _count(records, gap=10, grace=0)
    assert dropped == 1
    assert (sw("OnTime1", 0, 0), 1, 0) in out
    assert all(r[0].key != "Late1" for r in out)


def test_skips_late_record_with_nonzero_grace():
    """KStreamSessionWindowAggregateProcessorTest.shouldLogAndMeterWhenSkippingLateRecordWithNonzeroGrace:
    gap 10, grace 1; OnTime2@0 at stream time 11 (close time 0) is still accepted, Late1@0 at
    stream time 12 (close time 1) is dropped."""
    records = [("dummy", "dummy", 0), ("OnTime1", "1", 0), ("dummy", "dummy", 11), ("OnTime2", "1", 0),
               ("dummy", "dummy", 12), ("Late1", "1", 0)]
    out, _, dropped = _count(records, gap=10, grace=1)
    assert dropped == 1
    assert {r[0].key for r in out} == {"dummy", "OnTime1", "OnTime2"}


@STRATEGIES
def test_session_updates_carry_no_input_headers(emit):
    """Issue 39 against Kafka Streams 4.3.1: a session aggregation forwards none of its
    input records' headers — not on the merged session, the deletes of the sessions it
    replaced, nor (on window close) the final result; a time window keeps them."""
    builder = StreamsBuilder()
    _session_stream(builder, gap=5, emit=emit).count().to_stream() \
        .to("out", produced=Produced.with_(SW, L))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        for ts in (0, 3, 20):
            inp.pipe_input("a", "v", ts, headers={"h": str(ts).encode()})
        records = driver.create_output_topic("out", SW, L).read_records_to_list()
    assert records and all(r.headers == {} for r in records)
