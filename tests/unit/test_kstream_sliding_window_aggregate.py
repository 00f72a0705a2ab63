"""Sliding-window aggregation, ported from Kafka Streams'
``streams/src/test/java/org/apache/kafka/streams/kstream/internals/KStreamSlidingWindowAggregateTest.java``.

Kafka runs each test over emit strategy (on update / on close), in-order vs reverse
iteration of the window store, and caching on / off (caching only for emit-on-close). Our
processor has one code path (the reverse one, ``processReverse``; our store iterates both
ways) and its emit-on-close results never go through the cache, so the variants reduce to
the emit strategy; Kafka expects the same records from all of them. Expected records are
Kafka's, verbatim: where Kafka gathers the output per window start as sets of
(value, timestamp) the port does too, where it sorts by (key, window start) so do we.
Log-message and lateness-metric checks are Java-only; the dropped counts they pin are
checked via ``metrics()["dropped_records"]``.

Beyond Kafka's seeded shuffle (``testAggregateRandomInput``) a brute-force model of
sliding windows checks random multi-key inputs with late records, under both strategies.
"""
from __future__ import annotations

import random
from collections import defaultdict

import pytest

from streamlib import (Consumed, EmitStrategy, Materialized, Produced, SlidingWindows, StreamsBuilder)

from streams_helpers import S, driver_for, kvt
from windowed_helpers import random_stream, string_adder, string_init, time_windowed, wkvt

UPDATE, CLOSE = EmitStrategy.on_window_update(), EmitStrategy.on_window_close()
STRATEGIES = pytest.mark.parametrize("emit", [UPDATE, CLOSE], ids=["on_update", "on_close"])


def _sliding(builder, diff, grace, emit, topic="topic", store="store-name"):
    return builder.stream(topic, consumed=Consumed.with_(S, S)).group_by_key() \
        .windowed_by(SlidingWindows.of(diff, grace=grace)).emit_strategy(emit)


def _agg(builder, diff, grace, emit, topic="topic", store="store-name", initializer=string_init,
         aggregator=string_adder):
    return _sliding(builder, diff, grace, emit, topic).aggregate(
        initializer, aggregator, materialized=Materialized.as_(store).with_value_serde(S))


def _run(builder, table, diff, records, topic="topic"):
    """Pipe ``records`` [(key, value, ts)] into ``topic``; return the table's output
    [(Windowed, value, ts)] and the dropped-record count."""
    serde = time_windowed(diff)
    table.to_stream().to("out", produced=Produced.with_(serde, S))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic(topic, S, S)
        for key, value, ts in records:
            inp.pipe_input(key, value, ts)
        out = kvt(driver.create_output_topic("out", serde, S).read_records_to_list())
        return out, driver.metrics()["dropped_records"]


def _gather(out) -> dict[int, set[tuple[str, int]]]:
    """Kafka's gatherOutput: window start -> {(value, timestamp)}."""
    actual: dict[int, set] = defaultdict(set)
    for windowed, value, ts in out:
        actual[windowed.window.start].add((value, ts))
    return dict(actual)


def _sorted(out):
    """Kafka's comparator: by key, then window start (a stable sort, like List.sort)."""
    return sorted(out, key=lambda r: (r[0].key, r[0].window.start))


@STRATEGIES
def test_aggregate_small_input(emit):
    """KStreamSlidingWindowAggregateTest.testAggregateSmallInput: time difference 10, grace 5."""
    builder = StreamsBuilder()
    records = [("A", "1", 10), ("A", "2", 10), ("A", "3", 14), ("A", "4", 15), ("A", "5", 20), ("A", "6", 22),
               ("A", "7", 30)]
    out, _ = _run(builder, _agg(builder, 10, 5, emit), 10, records)
    if emit == CLOSE:
        expected = {0: {("0+1+2", 10)}, 4: {("0+1+2+3", 14)}, 5: {("0+1+2+3+4", 15)},
                    10: {("0+1+2+3+4+5", 20)}, 11: {("0+3+4+5", 20)}, 12: {("0+3+4+5+6", 22)}}
    else:
        expected = {0: {("0+1", 10), ("0+1+2", 10)}, 4: {("0+1+2+3", 14)}, 5: {("0+1+2+3+4", 15)},
                    10: {("0+1+2+3+4+5", 20)}, 11: {("0+3", 14), ("0+3+4", 15), ("0+3+4+5", 20)},
                    12: {("0+3+4+5+6", 22)}, 15: {("0+4", 15), ("0+4+5", 20), ("0+4+5+6", 22)},
                    16: {("0+5", 20), ("0+5+6", 22)}, 20: {("0+5+6+7", 30)}, 21: {("0+6", 22), ("0+6+7", 30)},
                    23: {("0+7", 30)}}
    assert _gather(out) == expected


@STRATEGIES
def test_reduce_small_input(emit):
    """KStreamSlidingWindowAggregateTest.testReduceSmallInput: reduce (MockReducer.STRING_ADDER),
    time difference 10, grace 5: a new window starts from the first value, not an initializer."""
    builder = StreamsBuilder()
    table = _sliding(builder, 10, 5, emit).reduce(lambda a, b: f"{a}+{b}",
                                                  materialized=Materialized.as_("store-name").with_value_serde(S))
    records = [("A", "1", 10), ("A", "2", 14), ("A", "3", 15), ("A", "4", 22), ("A", "5", 26), ("A", "6", 30)]
    out, _ = _run(builder, table, 10, records)
    if emit == CLOSE:
        expected = {0: {("1", 10)}, 4: {("1+2", 14)}, 5: {("1+2+3", 15)}, 11: {("2+3", 15)},
                    12: {("2+3+4", 22)}}
    else:
        expected = {0: {("1", 10)}, 4: {("1+2", 14)}, 5: {("1+2+3", 15)}, 11: {("2", 14), ("2+3", 15)},
                    12: {("2+3+4", 22)}, 15: {("3", 15), ("3+4", 22)}, 16: {("4", 22), ("4+5", 26)},
                    20: {("4+5+6", 30)}, 23: {("5", 26), ("5+6", 30)}, 27: {("6", 30)}}
    assert _gather(out) == expected


LARGE_INPUT = [("A", "1", 10), ("A", "2", 20), ("A", "3", 22), ("A", "4", 15),
               ("B", "1", 12), ("B", "2", 13), ("B", "3", 18), ("B", "4", 19), ("B", "5", 25), ("B", "6", 14),
               ("C", "1", 11), ("C", "2", 15), ("C", "3", 16), ("C", "4", 21), ("C", "5", 23),
               ("D", "4", 11), ("D", "2", 12), ("D", "3", 29), ("D", "5", 16)]


@STRATEGIES
def test_aggregate_large_input(emit):
    """KStreamSlidingWindowAggregateTest.testAggregateLargeInput: grace 10 (on close) / 50 (on
    update); out-of-order records update every open window they fall in and create the right
    windows of their neighbours. On close, B@14, C@11, D@11, D@12 and D@16 only hit closed windows
    (close time 15, then 19): what they would have updated is final without them."""
    builder = StreamsBuilder()
    out, _ = _run(builder, _agg(builder, 10, 10 if emit == CLOSE else 50, emit), 10, LARGE_INPUT)
    if emit == CLOSE:
        expected = [
            wkvt("A", 0, 10, "0+1", 10), wkvt("A", 5, 15, "0+1+4", 15),
            wkvt("B", 2, 12, "0+1", 12), wkvt("B", 3, 13, "0+1+2", 13), wkvt("B", 8, 18, "0+1+2+3+6", 18),
            wkvt("C", 5, 15, "0+2", 15), wkvt("C", 6, 16, "0+2+3", 16),
        ]
    else:
        expected = [
            wkvt("A", 0, 10, "0+1", 10), wkvt("A", 5, 15, "0+1+4", 15),
            wkvt("A", 10, 20, "0+1+2", 20), wkvt("A", 10, 20, "0+1+2+4", 20),
            wkvt("A", 11, 21, "0+2", 20), wkvt("A", 11, 21, "0+2+4", 20),
            wkvt("A", 12, 22, "0+2+3", 22), wkvt("A", 12, 22, "0+2+3+4", 22),
            wkvt("A", 16, 26, "0+2+3", 22), wkvt("A", 21, 31, "0+3", 22),
            wkvt("B", 2, 12, "0+1", 12), wkvt("B", 3, 13, "0+1+2", 13), wkvt("B", 4, 14, "0+1+2+6", 14),
            wkvt("B", 8, 18, "0+1+2+3", 18), wkvt("B", 8, 18, "0+1+2+3+6", 18),
            wkvt("B", 9, 19, "0+1+2+3+4", 19), wkvt("B", 9, 19, "0+1+2+3+4+6", 19),
            wkvt("B", 13, 23, "0+2", 13), wkvt("B", 13, 23, "0+2+3", 18), wkvt("B", 13, 23, "0+2+3+4", 19),
            wkvt("B", 13, 23, "0+2+3+4+6", 19),
            wkvt("B", 14, 24, "0+3", 18), wkvt("B", 14, 24, "0+3+4", 19), wkvt("B", 14, 24, "0+3+4+6", 19),
            wkvt("B", 15, 25, "0+3+4+5", 25), wkvt("B", 19, 29, "0+4", 19), wkvt("B", 19, 29, "0+4+5", 25),
            wkvt("B", 20, 30, "0+5", 25),
            wkvt("C", 1, 11, "0+1", 11), wkvt("C", 5, 15, "0+1+2", 15), wkvt("C", 6, 16, "0+1+2+3", 16),
            wkvt("C", 11, 21, "0+1+2+3+4", 21),
            wkvt("C", 12, 22, "0+2", 15), wkvt("C", 12, 22, "0+2+3", 16), wkvt("C", 12, 22, "0+2+3+4", 21),
            wkvt("C", 13, 23, "0+2+3+4+5", 23),
            wkvt("C", 16, 26, "0+3", 16), wkvt("C", 16, 26, "0+3+4", 21), wkvt("C", 16, 26, "0+3+4+5", 23),
            wkvt("C", 17, 27, "0+4", 21), wkvt("C", 17, 27, "0+4+5", 23), wkvt("C", 22, 32, "0+5", 23),
            wkvt("D", 1, 11, "0+4", 11), wkvt("D", 2, 12, "0+4+2", 12), wkvt("D", 6, 16, "0+4+2+5", 16),
            wkvt("D", 12, 22, "0+2", 12), wkvt("D", 12, 22, "0+2+5", 16), wkvt("D", 13, 23, "0+5", 16),
            wkvt("D", 19, 29, "0+3", 29),
        ]
    assert _sorted(out) == expected


def _join_run(emit):
    builder = StreamsBuilder()
    grace = 0 if emit == CLOSE else 100
    t1 = _agg(builder, 10, grace, emit, topic="topic1", store="store-name1")
    t2 = _agg(builder, 10, grace, emit, topic="topic2", store="store-name2")
    serde = time_windowed(10)
    for table, topic in ((t1, "out1"), (t2, "out2"), (t1.join(t2, lambda p1, p2: f"{p1}%{p2}"), "joined")):
        table.to_stream().to(topic, produced=Produced.with_(serde, S))
    return builder, serde


def _pipe(driver, serde, topic, records):
    inp = driver.create_input_topic(topic, S, S)
    for key, value, ts in records:
        inp.pipe_input(key, value, ts)
    return [kvt(driver.create_output_topic(t, serde, S).read_records_to_list()) for t in ("out1", "out2", "joined")]


@STRATEGIES
def test_join(emit):
    """KStreamSlidingWindowAggregateTest.testJoin: two sliding aggregations (grace 0 on close, 100
    on update) joined as tables on their windowed keys; the join's timestamp is the larger side's."""
    builder, serde = _join_run(emit)
    with driver_for(builder) as driver:
        out1, out2, joined = _pipe(driver, serde, "topic1", [("A", "1", 10), ("B", "2", 11), ("C", "3", 12)])
        first = [wkvt("A", 0, 10, "0+1", 10), wkvt("B", 1, 11, "0+2", 11)]
        assert out1 == (first if emit == CLOSE else first + [wkvt("C", 2, 12, "0+3", 12)])
        assert out2 == [] and joined == []

        out1, out2, joined = _pipe(driver, serde, "topic1", [("A", "1", 15), ("B", "2", 16), ("C", "3", 19)])
        if emit == CLOSE:
            assert out1 == [wkvt("C", 2, 12, "0+3", 12), wkvt("A", 5, 15, "0+1+1", 15),
                            wkvt("B", 6, 16, "0+2+2", 16)]
        else:
            assert out1 == [wkvt("A", 11, 21, "0+1", 15), wkvt("A", 5, 15, "0+1+1", 15),
                            wkvt("B", 12, 22, "0+2", 16), wkvt("B", 6, 16, "0+2+2", 16),
                            wkvt("C", 13, 23, "0+3", 19), wkvt("C", 9, 19, "0+3+3", 19)]
        assert out2 == [] and joined == []

        out1, out2, joined = _pipe(driver, serde, "topic2", [("A", "a", 10), ("C", "c", 12)])
        assert out1 == []
        if emit == CLOSE:
            assert out2 == [wkvt("A", 0, 10, "0+a", 10)]
            assert joined == [wkvt("A", 0, 10, "0+1%0+a", 10)]
        else:
            assert out2 == [wkvt("A", 0, 10, "0+a", 10), wkvt("C", 2, 12, "0+c", 12)]
            assert joined == [wkvt("A", 0, 10, "0+1%0+a", 10), wkvt("C", 2, 12, "0+3%0+c", 12)]

        out1, out2, joined = _pipe(driver, serde, "topic2", [("A", "a", 15), ("B", "b", 16), ("C", "c", 17)])
        assert out1 == []
        if emit == CLOSE:
            assert out2 == [wkvt("C", 2, 12, "0+c", 12), wkvt("A", 5, 15, "0+a+a", 15),
                            wkvt("B", 6, 16, "0+b", 16)]
            assert joined == [wkvt("C", 2, 12, "0+3%0+c", 12), wkvt("A", 5, 15, "0+1+1%0+a+a", 15),
                              wkvt("B", 6, 16, "0+2+2%0+b", 16)]
        else:
            assert out2 == [wkvt("A", 11, 21, "0+a", 15), wkvt("A", 5, 15, "0+a+a", 15),
                            wkvt("B", 6, 16, "0+b", 16), wkvt("C", 13, 23, "0+c", 17),
                            wkvt("C", 7, 17, "0+c+c", 17)]
            assert joined == [wkvt("A", 11, 21, "0+1%0+a", 15), wkvt("A", 5, 15, "0+1+1%0+a+a", 15),
                              wkvt("B", 6, 16, "0+2+2%0+b", 16), wkvt("C", 13, 23, "0+3%0+c", 19)]


EARLY_SMALL = [("A", "1", 0), ("A", "2", 5), ("A", "3", 6), ("A", "4", 3), ("A", "5", 13), ("A", "6", 10)]
EARLY_SMALL_CLOSED = {0: {("0+1+2+3+4+5+6", 13)}, 1: {("0+2+3+4+5+6", 13)}, 4: {("0+2+3+5+6", 13)},
                      6: {("0+3+5+6", 13)}, 7: {("0+5+6", 13)}, 11: {("0+5", 13)}}
EARLY_SMALL_UPDATES = {
    0: {("0+1", 0), ("0+1+2", 5), ("0+1+2+3", 6), ("0+1+2+3+4", 6), ("0+1+2+3+4+5", 13), ("0+1+2+3+4+5+6", 13)},
    1: {("0+2", 5), ("0+2+3", 6), ("0+2+3+4", 6), ("0+2+3+4+5", 13), ("0+2+3+4+5+6", 13)},
    4: {("0+2+3", 6), ("0+2+3+5", 13), ("0+2+3+5+6", 13)},
    6: {("0+3", 6), ("0+3+5", 13), ("0+3+5+6", 13)},
    7: {("0+5", 13), ("0+5+6", 13)},
    11: {("0+5", 13)},
}


@STRATEGIES
def test_early_records_small_input(emit):
    """KStreamSlidingWindowAggregateTest.testEarlyRecordsSmallInput: time difference 50, grace 0;
    records before 50 share the window [0, 50] and get right windows as later records come."""
    builder = StreamsBuilder()
    out, _ = _run(builder, _agg(builder, 50, 0, emit), 50, EARLY_SMALL + [("A", "7", 70)])
    expected = EARLY_SMALL_CLOSED if emit == CLOSE else {**EARLY_SMALL_UPDATES, 20: {("0+7", 70)}}
    assert _gather(out) == expected


@STRATEGIES
def test_early_no_grace_period_small_input(emit):
    """KStreamSlidingWindowAggregateTest.testEarlyNoGracePeriodSmallInput:
    SlidingWindows.ofTimeDifferenceWithNoGrace(50); every record but the last is early."""
    builder = StreamsBuilder()
    table = builder.stream("topic", consumed=Consumed.with_(S, S)).group_by_key() \
        .windowed_by(SlidingWindows.of_time_difference_with_no_grace(50)).emit_strategy(emit) \
        .aggregate(string_init, string_adder, materialized=Materialized.as_("topic-Canonized").with_value_serde(S))
    out, _ = _run(builder, table, 50, EARLY_SMALL + [("A", "6", 70)])
    expected = EARLY_SMALL_CLOSED if emit == CLOSE else {**EARLY_SMALL_UPDATES, 20: {("0+6", 70)}}
    assert _gather(out) == expected


@STRATEGIES
def test_early_records_repeated_input(emit):
    """KStreamSlidingWindowAggregateTest.testEarlyRecordsRepeatedInput: time difference 5, grace 0;
    several early records at the same timestamps."""
    builder = StreamsBuilder()
    records = [("A", "1", 0), ("A", "2", 2), ("A", "3", 4), ("A", "4", 0), ("A", "5", 2), ("A", "6", 2),
               ("A", "7", 0), ("A", "8", 7)]
    out, _ = _run(builder, _agg(builder, 5, 0, emit), 5, records)
    if emit == CLOSE:
        expected = {0: {("0+1+2+3+4+5+6+7", 4)}, 1: {("0+2+3+5+6", 4)}}
    else:
        expected = {0: {("0+1", 0), ("0+1+2", 2), ("0+1+2+3+4+5", 4), ("0+1+2+3+4+5+6", 4), ("0+1+2+3", 4),
                        ("0+1+2+3+4", 4), ("0+1+2+3+4+5+6+7", 4)},
                    1: {("0+2+3+5+6", 4), ("0+2", 2), ("0+2+3", 4), ("0+2+3+5", 4)},
                    2: {("0+2+3+5+6+8", 7)}, 3: {("0+3", 4), ("0+3+8", 7)}, 5: {("0+8", 7)}}
    assert _gather(out) == expected


EARLY_LARGE = [("E", "1", 0), ("E", "3", 5), ("E", "4", 6), ("E", "2", 3), ("E", "6", 13), ("E", "5", 10),
               ("E", "7", 4), ("E", "8", 2), ("E", "9", 15)]


def _e(start, value, ts, offset=0):
    return wkvt("E", start + offset, start + offset + 10, value, ts + offset)


# windows from [3,13] on, identical in the three large early/no-grace tests (offset 0 or 100)
def _large_tail(o):
    return [
        _e(3, "0+3+4+2+6", 13, o), _e(3, "0+3+4+2+6+5", 13, o), _e(3, "0+3+4+2+6+5+7", 13, o),
        _e(4, "0+3+4", 6, o), _e(4, "0+3+4+6", 13, o), _e(4, "0+3+4+6+5", 13, o), _e(4, "0+3+4+6+5+7", 13, o),
        _e(5, "0+3+4+6+5", 13, o), _e(5, "0+3+4+6+5+9", 15, o),
        _e(6, "0+4", 6, o), _e(6, "0+4+6", 13, o), _e(6, "0+4+6+5", 13, o), _e(6, "0+4+6+5+9", 15, o),
        _e(7, "0+6", 13, o), _e(7, "0+6+5", 13, o), _e(7, "0+6+5+9", 15, o),
        _e(11, "0+6", 13, o), _e(11, "0+6+9", 15, o), _e(14, "0+9", 15, o),
    ]


@STRATEGIES
def test_early_records_large_input(emit):
    """KStreamSlidingWindowAggregateTest.testEarlyRecordsLargeInput: time difference 10, grace 1
    (on close) / 50 (on update); early and out-of-order records of one key."""
    builder = StreamsBuilder()
    out, _ = _run(builder, _agg(builder, 10, 1 if emit == CLOSE else 50, emit), 10, EARLY_LARGE)
    if emit == CLOSE:
        expected = [_e(0, "0+1+3+4+2", 6), _e(1, "0+3+4+2", 6), _e(3, "0+3+4+2+6+5+7", 13)]
    else:
        expected = [
            _e(0, "0+1", 0), _e(0, "0+1+3", 5), _e(0, "0+1+3+4", 6), _e(0, "0+1+3+4+2", 6),
            _e(0, "0+1+3+4+2+5", 10), _e(0, "0+1+3+4+2+5+7", 10), _e(0, "0+1+3+4+2+5+7+8", 10),
            _e(1, "0+3", 5), _e(1, "0+3+4", 6), _e(1, "0+3+4+2", 6), _e(1, "0+3+4+2+5", 10),
            _e(1, "0+3+4+2+5+7", 10), _e(1, "0+3+4+2+5+7+8", 10),
        ] + _large_tail(0)
    assert _sorted(out) == expected


def _no_grace_agg(builder, diff, emit):
    return builder.stream("topic", consumed=Consumed.with_(S, S)).group_by_key() \
        .windowed_by(SlidingWindows.of_time_difference_with_no_grace(diff)).emit_strategy(emit) \
        .aggregate(string_init, string_adder, materialized=Materialized.as_("store-name").with_value_serde(S))


@STRATEGIES
def test_early_no_grace_period_large_input(emit):
    """KStreamSlidingWindowAggregateTest.testEarlyNoGracePeriodLargeInput: time difference 10, no
    grace: E@10, E@4 and E@2 come too late for [0,10] and [1,11]."""
    builder = StreamsBuilder()
    out, _ = _run(builder, _no_grace_agg(builder, 10, emit), 10, EARLY_LARGE)
    if emit == CLOSE:
        expected = [_e(0, "0+1+3+4+2", 6), _e(1, "0+3+4+2", 6), _e(3, "0+3+4+2+6+5+7", 13),
                    _e(4, "0+3+4+6+5+7", 13)]
    else:
        expected = [
            _e(0, "0+1", 0), _e(0, "0+1+3", 5), _e(0, "0+1+3+4", 6), _e(0, "0+1+3+4+2", 6),
            _e(1, "0+3", 5), _e(1, "0+3+4", 6), _e(1, "0+3+4+2", 6),
        ] + _large_tail(0)
    assert _sorted(out) == expected


@STRATEGIES
def test_no_grace_period_large_input(emit):
    """KStreamSlidingWindowAggregateTest.testNoGracePeriodLargeInput: the same records 100 ms later,
    so none is early: E@100's left window is [90,100], E@106's [96,106]."""
    builder = StreamsBuilder()
    records = [(k, v, ts + 100) for k, v, ts in EARLY_LARGE]
    out, _ = _run(builder, _no_grace_agg(builder, 10, emit), 10, records)
    if emit == CLOSE:
        expected = [_e(-10, "0+1", 0, 100), _e(-5, "0+1+3", 5, 100), _e(-4, "0+1+3+4+2", 6, 100),
                    _e(1, "0+3+4+2", 6, 100), _e(3, "0+3+4+2+6+5+7", 13, 100), _e(4, "0+3+4+6+5+7", 13, 100)]
    else:
        expected = [
            _e(-10, "0+1", 0, 100), _e(-5, "0+1+3", 5, 100), _e(-4, "0+1+3+4", 6, 100),
            _e(-4, "0+1+3+4+2", 6, 100),
            _e(1, "0+3", 5, 100), _e(1, "0+3+4", 6, 100), _e(1, "0+3+4+2", 6, 100),
        ] + _large_tail(100)
    assert _sorted(out) == expected


@STRATEGIES
def test_no_grace_period_small_input(emit):
    """KStreamSlidingWindowAggregateTest.testNoGracePeriodSmallInput: time difference 50, no grace,
    records from 100 on (none early)."""
    builder = StreamsBuilder()
    table = builder.stream("topic", consumed=Consumed.with_(S, S)).group_by_key() \
        .windowed_by(SlidingWindows.of_time_difference_with_no_grace(50)).emit_strategy(emit) \
        .aggregate(string_init, string_adder, materialized=Materialized.as_("topic-Canonized").with_value_serde(S))
    records = [("A", "1", 100), ("A", "2", 105), ("A", "3", 106), ("A", "4", 103), ("A", "5", 113),
               ("A", "6", 110)]
    out, _ = _run(builder, table, 50, records)
    if emit == CLOSE:
        expected = {50: {("0+1", 100)}, 55: {("0+1+2", 105)}, 56: {("0+1+2+3+4", 106)}}
    else:
        expected = {50: {("0+1", 100)}, 55: {("0+1+2", 105)}, 56: {("0+1+2+3", 106), ("0+1+2+3+4", 106)},
                    63: {("0+1+2+3+4+5", 113), ("0+1+2+3+4+5+6", 113)},
                    101: {("0+2", 105), ("0+2+3", 106), ("0+2+3+4", 106), ("0+2+3+4+5", 113),
                          ("0+2+3+4+5+6", 113)},
                    104: {("0+2+3", 106), ("0+2+3+5", 113), ("0+2+3+5+6", 113)},
                    106: {("0+3", 106), ("0+3+5", 113), ("0+3+5+6", 113)},
                    107: {("0+5", 113), ("0+5+6", 113)}, 111: {("0+5", 113)}}
    assert _gather(out) == expected


@STRATEGIES
def test_skip_null_key_and_value(emit):
    """KStreamSlidingWindowAggregateTest.shouldLogAndMeterWhenSkippingNullKey: a record with a null
    key (and, by the same rule, one with a null value) is dropped and counted."""
    builder = StreamsBuilder()
    out, dropped = _run(builder, _agg(builder, 10, 100, emit, store="topic1-Canonized"), 10,
                        [(None, "1", 0), ("k", None, 0)])
    assert out == [] and dropped == 2


@STRATEGIES
def test_skip_expired_window_by_grace(emit):
    """KStreamSlidingWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace: grace 90;
    after k@200 (close time 110) k@100..k@105 find only their closed left windows (each counted
    once) and k@15 is dropped whole: 7 dropped. Output topic read with a time-windowed serde."""
    builder = StreamsBuilder()
    records = [("k", "100", 200), ("k", "0", 100), ("k", "1", 101), ("k", "2", 102), ("k", "3", 103),
               ("k", "4", 104), ("k", "5", 105), ("k", "6", 15), ("k", "101", 300), ("k", "102", 400)]
    out, dropped = _run(builder, _agg(builder, 10, 90, emit), 10, records)
    assert dropped == 7
    expected = [wkvt("k", 190, 200, "0+100", 200), wkvt("k", 290, 300, "0+101", 300)]
    assert out == (expected if emit == CLOSE else expected + [wkvt("k", 390, 400, "0+102", 400)])


# --- randomized ------------------------------------------------------------------------------

def _sorted_chars(key, value, agg):
    """testAggregateRandomInput's aggregator: the characters sorted, so a window's value does
    not depend on the order its records came in."""
    return "".join(sorted(agg + value))


RANDOM_INPUT = [("A", 10), ("B", 15), ("C", 16), ("D", 18), ("E", 30), ("F", 40), ("G", 55), ("H", 56),
                ("I", 58), ("J", 58), ("K", 62), ("L", 63), ("M", 63), ("N", 63), ("O", 76), ("P", 77),
                ("Q", 80), ("R", 2), ("S", 3), ("T", 5), ("U", 8)]


@STRATEGIES
@pytest.mark.parametrize("seed", range(8))
def test_aggregate_random_input(emit, seed):
    """KStreamSlidingWindowAggregateTest.testAggregateRandomInput: the same 21 records in a shuffled
    order (seeded here, so a failure names its seed), then V@181; the last value per window start
    must not depend on the order. On close only the windows not yet expired when V@181 closes them
    (store retention 2 * 10 + 100 from window start 171) are emitted."""
    builder = StreamsBuilder()
    table = _agg(builder, 10, 100, emit, initializer=lambda: "", aggregator=_sorted_chars)
    records = list(RANDOM_INPUT)
    random.Random(seed).shuffle(records)
    out, _ = _run(builder, table, 10, [("A", v, ts) for v, ts in records] + [("A", "V", 181)])
    results = {w.window.start: (value, ts) for w, value, ts in out}
    if emit == CLOSE:
        expected = {52: ("GHIJK", 62), 53: ("GHIJKLMN", 63), 56: ("HIJKLMN", 63), 57: ("IJKLMN", 63),
                    59: ("KLMN", 63), 63: ("LMN", 63), 66: ("O", 76), 67: ("OP", 77), 70: ("OPQ", 80)}
    else:
        expected = {0: ("ARSTU", 10), 3: ("ASTU", 10), 4: ("ATU", 10), 5: ("ABTU", 15), 6: ("ABCU", 16),
                    8: ("ABCDU", 18), 9: ("ABCD", 18), 11: ("BCD", 18), 16: ("CD", 18), 17: ("D", 18),
                    20: ("E", 30), 30: ("EF", 40), 31: ("F", 40), 45: ("G", 55), 46: ("GH", 56),
                    48: ("GHIJ", 58), 52: ("GHIJK", 62), 53: ("GHIJKLMN", 63), 56: ("HIJKLMN", 63),
                    57: ("IJKLMN", 63), 59: ("KLMN", 63), 63: ("LMN", 63), 66: ("O", 76), 67: ("OP", 77),
                    70: ("OPQ", 80), 77: ("PQ", 80), 78: ("Q", 80), 171: ("V", 181)}
    assert results == expected, f"seed {seed}"


def _brute_force(records, diff: int, grace: int):
    """Sliding windows from their definition: per key, each accepted record at t has the left
    window [max(0, t - diff), ...] and, when an accepted record lies in [t + 1, t + 1 + diff], the
    right window starting at t + 1; a window [s, s + diff] holds the accepted records in it and
    carries their largest timestamp. A record is accepted unless t + diff < stream time - grace.
    Returns ({(key, start): (sorted values, max ts)}, dropped count, final close time)."""
    accepted, observed, dropped = defaultdict(list), -1, 0
    for key, value, ts in records:
        observed = max(observed, ts)
        if ts + diff < observed - grace:
            dropped += 1
        else:
            accepted[key].append((ts, value))
    windows = {}
    for key, recs in accepted.items():
        times = [t for t, _ in recs]
        starts = {max(0, t - diff) for t in times}
        starts |= {t + 1 for t in times if any(t < u <= t + 1 + diff for u in times)}
        for s in starts:
            inside = [(t, v) for t, v in recs if s <= t <= s + diff]
            windows[(key, s)] = (",".join(sorted(v for _, v in inside)), max(t for t, _ in inside))
    return windows, dropped, observed - grace


def _value_set(key, value, agg):
    """The window's values, sorted: the same whatever order the records came in."""
    return ",".join(sorted(agg.split(",") + [value])) if agg else value


@STRATEGIES
@pytest.mark.parametrize("seed", range(6))
def test_random_input_matches_brute_force(emit, seed):
    """Random multi-key input with out-of-order and late records against the brute-force model
    (no Kafka counterpart; it generalises testAggregateRandomInput). On update the last value of
    every window is the model's; on close each window that closed is emitted exactly once, with
    its final value, and no other window; late records are counted as dropped."""
    rng = random.Random(seed)
    diff, grace = rng.choice([(10, 20), (30, 40), (5, 100)])
    records = random_stream(rng, 300, 3, diff, grace)
    builder = StreamsBuilder()
    table = _agg(builder, diff, grace, emit, initializer=lambda: "", aggregator=_value_set)
    out, dropped = _run(builder, table, diff, records)
    expected, expected_dropped, close_time = _brute_force(records, diff, grace)
    assert dropped == expected_dropped, f"seed {seed}"
    if emit == UPDATE:
        last = {(w.key, w.window.start): (value, ts) for w, value, ts in out}
        assert last == expected, f"seed {seed}"
    else:
        emitted = [((w.key, w.window.start), (value, ts)) for w, value, ts in out]
        assert len(emitted) == len(set(k for k, _ in emitted)), f"seed {seed}: a window emitted twice"
        closed = {k: v for k, v in expected.items() if k[1] + diff < close_time}
        assert dict(emitted) == closed, f"seed {seed}"


@STRATEGIES
@pytest.mark.parametrize("seed", range(3))
def test_random_input_in_one_cached_batch_matches_brute_force(emit, seed, tmp_path):
    """The brute-force comparison with every record in ONE batch of a caching task (the Spark
    path's commit, Kafka's cached store): on update exactly one update per window, the last."""
    from streams_helpers import run_cached_batch
    rng = random.Random(100 + seed)
    diff, grace = rng.choice([(10, 20), (30, 40), (5, 100)])
    records = random_stream(rng, 300, 3, diff, grace)
    builder = StreamsBuilder()
    table = _agg(builder, diff, grace, emit, initializer=lambda: "", aggregator=_value_set)
    serde = time_windowed(diff)
    table.to_stream().to("out", produced=Produced.with_(serde, S))
    rows = run_cached_batch(builder.build(), [("topic", S.serialize(k), S.serialize(v), ts)
                                              for k, v, ts in records], tmp_path)
    out = [(serde.deserialize(k), S.deserialize(v), ts) for topic, ts, k, v in rows if topic == "out"]
    expected, _, close_time = _brute_force(records, diff, grace)
    got = {(w.key, w.window.start): (value, ts) for w, value, ts in out}
    if emit == UPDATE:
        assert len(got) == len(out), f"seed {seed}: more than one update of a window in one commit"
        assert got == expected, f"seed {seed}"
    else:
        assert len(got) == len(out), f"seed {seed}: a window emitted twice"
        assert got == {k: v for k, v in expected.items() if k[1] + diff < close_time}, f"seed {seed}"
