"""Kafka Streams' unit tests for suppression, windowed aggregation and table–table joins,
ported to streamlib's DSL (TopologyTestDriver; no Spark). Complements
test_suppress_scenarios.py, test_kstream_window_aggregate.py, test_time_windowed_kstream.py
and test_ktable_ktable_joins.py without repeating them.

Sources (apache/kafka, ``streams/src/test/java/org/apache/kafka/streams/kstream/internals/``):

* ``suppress/KTableSuppressProcessorTest``: its final-results cases drive the processor with
  hand-made ``Change``s; here the same situations arise from a windowed ``count()`` (the
  value is a count instead of Kafka's arbitrary ``Change(7, 14)``; keys, windows, timestamps
  and what is emitted when are Kafka's). Tombstones, which a windowed aggregate never emits
  by itself, come from a ``filter`` between the aggregate and ``suppress`` (Kafka's
  ``KTableFilter`` forwards ``Change(null, old)`` when a row stops matching).
* ``KTableKTableInnerJoinTest`` / ``LeftJoinTest`` / ``OuterJoinTest``: the old values of
  ``testSendingOldValue(s)`` are observed through a re-grouping whose adder and subtractor
  log every value they get (Kafka's ``KTableAggregate`` subtracts ``Change.oldValue``, then
  adds ``Change.newValue``), so each ``Change(new, old)`` Kafka expects shows up exactly.

Java prints ``Windowed`` keys as ``[key@start/end]``; so do the outputs here.
"""
from __future__ import annotations

import random

import pytest

from streamlib import (Consumed, EmitStrategy, Grouped, Materialized, Produced, SessionWindows, SlidingWindows,
                       StreamsBuilder, Suppressed, TimeWindows)

from join_helpers import tostring_joiner
from streams_helpers import I, L, S, driver_for, kvt
from windowed_helpers import SuppressOutputs


# -- suppress: KTableSuppressProcessorTest, final results ---------------------------------------------------------

def _windowed_string(k, v):
    return f"[{k.key}@{k.window.start}/{k.window.end}]", v


def _suppressed_counts(windows, keep=None):
    """count() per key over ``windows`` (caching disabled, as in Kafka's tests), optionally
    filtered by ``keep(windowed_key, count)``, then ``suppress(until_window_closes())``;
    raw (filtered) updates go to "output-raw", final results to "output-suppressed"."""
    builder = StreamsBuilder()
    counts = builder.stream("input", consumed=Consumed.with_(S, S)) \
        .group_by(lambda k, v: k, Grouped.with_(S, S)) \
        .windowed_by(windows) \
        .count(materialized=Materialized.as_("counts").with_caching_disabled())
    if keep is not None:
        counts = counts.filter(keep)
    counts.suppress(Suppressed.until_window_closes()).to_stream().map(_windowed_string) \
        .to("output-suppressed", produced=Produced.with_(S, L))
    counts.to_stream().map(_windowed_string).to("output-raw", produced=Produced.with_(S, L))
    return builder


class _Run(SuppressOutputs):
    """``pipe`` returns what was emitted."""

    def pipe(self, key, timestamp):
        self.inp.pipe_input(key, "v", timestamp)
        return kvt(self.suppressed.read_records_to_list())


def test_final_results_buffer_and_emit_at_grace_expiration():
    """KTableSuppressProcessorTest.finalResultsSuppressionShouldBufferAndEmitAtGraceExpiration:
    window size 1, grace 1. "hey" in [99,100) is buffered; stream time 100 is not enough
    (the window closes 1 ms after its end); at 101 "hey" is emitted with its record time 99."""
    with driver_for(_suppressed_counts(TimeWindows.of(1, grace=1))) as driver:
        run = _Run(driver)
        assert run.pipe("hey", 99) == []
        assert run.pipe("dummyKey1", 100) == []
        assert run.pipe("dummyKey2", 101) == [("[hey@99/100]", 1, 99)]


def test_final_results_with_zero_grace_still_buffer_until_the_window_end():
    """KTableSuppressProcessorTest.finalResultsWithZeroGraceShouldStillBufferUntilTheWindowEnd:
    size 100, grace 0: a record at 5 in [0,100) is held although the grace is 0, and emitted
    (with timestamp 5) once stream time reaches the window end 100."""
    with driver_for(_suppressed_counts(TimeWindows.of(100, grace=0))) as driver:
        run = _Run(driver)
        assert run.pipe("hey", 5) == []
        assert run.pipe("dummyKey", 100) == [("[hey@0/100]", 1, 5)]


def test_final_results_with_zero_grace_at_window_end_immediately_emit():
    """KTableSuppressProcessorTest.finalResultsWithZeroGraceAtWindowEndShouldImmediatelyEmit:
    an update of window [0,100] stamped 100 with grace 0 is final at once. A record at 100
    produces exactly that window with sliding windows (time difference 100, grace 0: the
    record's left window [0,100], ends inclusive)."""
    with driver_for(_suppressed_counts(SlidingWindows.of(100, grace=0))) as driver:
        run = _Run(driver)
        assert run.pipe("hey", 100) == [("[hey@0/100]", 1, 100)]
        assert kvt(run.raw.read_records_to_list()) == [("[hey@0/100]", 1, 100)]


def test_final_results_drop_tombstones_for_time_windows():
    """KTableSuppressProcessorTest.finalResultsShouldDropTombstonesForTimeWindows: a window
    whose latest update is a tombstone has no final result. The filter keeps counts below 2:
    hey's second record turns [0,100) into a tombstone (Change(null, 1)); its third changes
    nothing (Kafka's filter drops Change(null, null) once suppress asked for old values)."""
    with driver_for(_suppressed_counts(TimeWindows.of(100, grace=0), keep=lambda k, v: v < 2)) as driver:
        run = _Run(driver)
        for key, ts in [("hey", 5), ("hey", 6), ("hey", 7), ("ho", 8)]:
            assert run.pipe(key, ts) == []
        assert kvt(run.raw.read_records_to_list()) == [("[hey@0/100]", 1, 5), ("[hey@0/100]", None, 6),
                                                       ("[ho@0/100]", 1, 8)]
        assert run.pipe("dummyKey", 100) == [("[ho@0/100]", 1, 8)]


def test_final_results_drop_tombstones_for_session_windows():
    """KTableSuppressProcessorTest.finalResultsShouldDropTombstonesForSessionWindows: gap 5,
    grace 0, filter keeps counts below 2. hey@1 merges [0,0] into [0,1] (count 2, filtered
    away): the delete of [0,0] is the session's last word, so nothing final is emitted for
    it; ho's [2,2] is emitted once stream time 100 closes it."""
    with driver_for(_suppressed_counts(SessionWindows.with_inactivity_gap(5, grace=0),
                                       keep=lambda k, v: v < 2)) as driver:
        run = _Run(driver)
        for key, ts in [("hey", 0), ("hey", 1), ("ho", 2)]:
            assert run.pipe(key, ts) == []
        assert kvt(run.raw.read_records_to_list()) == [("[hey@0/0]", 1, 0), ("[hey@0/0]", None, 0),
                                                       ("[ho@2/2]", 1, 2)]
        assert run.pipe("dummyKey", 100) == [("[ho@2/2]", 1, 2)]


# -- windowed aggregation: KStreamWindowAggregateTest ----------------------------------------------------------------

@pytest.mark.parametrize("emit", [EmitStrategy.on_window_update(), EmitStrategy.on_window_close()],
                         ids=["on_update", "on_close"])
def test_skipping_expired_window_with_explicit_retention(emit):
    """KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindow, with the store
    exactly as Kafka configures it (``withLoggingDisabled().withRetention(100)``, which
    test_kstream_window_aggregate.py leaves out): hopping 10/5, grace 90; at stream time 100
    the records 0..6 miss the closed [0,10) (7 drops), 5 and 6 still land in [5,15). The
    lateness metrics Kafka also checks have no streamlib name."""
    builder = StreamsBuilder()
    builder.stream("topic", consumed=Consumed.with_(S, S)).group_by_key(grouped=Grouped.with_(S, S)) \
        .windowed_by(TimeWindows.of(10, grace=90).advance_by(5)).emit_strategy(emit) \
        .aggregate(lambda: "", lambda k, v, agg: f"{agg}+{v}",
                   materialized=Materialized.as_("topic1-Canonicalized").with_value_serde(S)
                   .with_logging_disabled().with_retention(100)) \
        .to_stream().map(_windowed_string).to("output", produced=Produced.with_(S, S))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic", S, S)
        for ts in (100, 0, 1, 2, 3, 4, 5, 6, 105, 106):
            inp.pipe_input("k", str(ts), ts)
        out = kvt(driver.create_output_topic("output", S, S).read_records_to_list())
        assert driver.metrics()["dropped_records"] == 7
    if emit == EmitStrategy.on_window_close():
        assert out == [("[k@5/15]", "+5+6", 6)]
    else:
        assert out == [("[k@95/105]", "+100", 100), ("[k@100/110]", "+100", 100), ("[k@5/15]", "+5", 5),
                       ("[k@5/15]", "+5+6", 6), ("[k@100/110]", "+100+105", 105), ("[k@105/115]", "+105", 105),
                       ("[k@100/110]", "+100+105+106", 106), ("[k@105/115]", "+105+106", 106)]


# -- table-table joins: KTableKTable{Inner,Left,Outer}JoinTest -------------------------------------------------------

CONSUMED = Consumed.with_(I, S)
KEYS = (0, 1, 2, 3)

#: Kafka's input, one step each: (topic, [(key, value, timestamp)])
STEPS = [
    ("topic1", [(0, "X0", 5), (1, "X1", 6), (None, "SomeVal", 42)]),
    ("topic2", [(0, "Y0", 0), (1, "Y1", 10), (None, "AnotherVal", 73)]),
    ("topic1", [(k, f"XX{k}", 7) for k in KEYS]),
    ("topic2", [(k, f"YY{k}", k * 5) for k in KEYS]),
    ("topic1", [(k, f"XXX{k}", 6) for k in KEYS]),
    ("topic2", [(0, None, 5), (1, None, 7)]),
    ("topic1", [(k, f"XXXX{k}", 13) for k in KEYS]),
    ("topic1", [(0, None, 0), (1, None, 42), (2, None, 5), (3, None, 20)]),
]

#: testSendingOldValue(s): the Change(new, old) each step forwards, as (key, new, old).
_LEFT_CHANGES = [
    [(0, "X0+null", None), (1, "X1+null", None)],
    [(0, "X0+Y0", "X0+null"), (1, "X1+Y1", "X1+null")],
    [(0, "XX0+Y0", "X0+Y0"), (1, "XX1+Y1", "X1+Y1"), (2, "XX2+null", None), (3, "XX3+null", None)],
    [(0, "XX0+YY0", "XX0+Y0"), (1, "XX1+YY1", "XX1+Y1"), (2, "XX2+YY2", "XX2+null"), (3, "XX3+YY3", "XX3+null")],
    [(k, f"XXX{k}+YY{k}", f"XX{k}+YY{k}") for k in KEYS],
    [(0, "XXX0+null", "XXX0+YY0"), (1, "XXX1+null", "XXX1+YY1")],
    [(0, "XXXX0+null", "XXX0+null"), (1, "XXXX1+null", "XXX1+null"), (2, "XXXX2+YY2", "XXX2+YY2"),
     (3, "XXXX3+YY3", "XXX3+YY3")],
    [(0, None, "XXXX0+null"), (1, None, "XXXX1+null"), (2, None, "XXXX2+YY2"), (3, None, "XXXX3+YY3")],
]
CHANGES = {
    "inner": [
        [],
        [(0, "X0+Y0", None), (1, "X1+Y1", None)],
        [(0, "XX0+Y0", "X0+Y0"), (1, "XX1+Y1", "X1+Y1")],
        [(0, "XX0+YY0", "XX0+Y0"), (1, "XX1+YY1", "XX1+Y1"), (2, "XX2+YY2", None), (3, "XX3+YY3", None)],
        [(k, f"XXX{k}+YY{k}", f"XX{k}+YY{k}") for k in KEYS],
        [(0, None, "XXX0+YY0"), (1, None, "XXX1+YY1")],
        [(2, "XXXX2+YY2", "XXX2+YY2"), (3, "XXXX3+YY3", "XXX3+YY3")],
        [(2, None, "XXXX2+YY2"), (3, None, "XXXX3+YY3")],
    ],
    "left": _LEFT_CHANGES,
    "outer": _LEFT_CHANGES[:-1] + [
        [(0, None, "XXXX0+null"), (1, None, "XXXX1+null"), (2, "null+YY2", "XXXX2+YY2"),
         (3, "null+YY3", "XXXX3+YY3")]],
}
KAFKA_TEST = {"inner": "KTableKTableInnerJoinTest.testSendingOldValues",
              "left": "KTableKTableLeftJoinTest.testSendingOldValue",
              "outer": "KTableKTableOuterJoinTest.testSendingOldValue"}


def _join(table1, table2, how, **kwargs):
    return getattr(table1, {"inner": "join", "left": "left_join", "outer": "outer_join"}[how])(
        table2, tostring_joiner, **kwargs)


def _pipe_steps(driver, steps=STEPS):
    """Pipe each step; yield after each one."""
    inputs = {t: driver.create_input_topic(t, I, S) for t in ("topic1", "topic2")}
    for topic, records in steps:
        for key, value, ts in records:
            inputs[topic].pipe_input(key, value, ts)
        yield


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_sending_old_values(how):
    """KTableKTableInnerJoinTest.testSendingOldValues, KTableKTableLeftJoinTest.testSendingOldValue,
    KTableKTableOuterJoinTest.testSendingOldValue: a re-grouping after the join (which makes
    the join send old values, like Kafka's enableSendingOldValues(true)) receives each
    Change(new, old) Kafka expects: the subtractor gets ``old``, the adder ``new``, in that
    order; a step that forwards nothing for a key leaves its log unchanged."""
    builder = StreamsBuilder()
    table1 = builder.table("topic1", consumed=CONSUMED)
    table2 = builder.table("topic2", consumed=CONSUMED)
    _join(table1, table2, how).group_by(lambda k, v: (k, v), Grouped.with_(I, S)).aggregate(
        lambda: "", lambda k, v, agg: f"{agg} +[{v}]", lambda k, v, agg: f"{agg} -[{v}]",
        materialized=Materialized.as_("changes").with_value_serde(S))
    expected: dict[int, str] = {}
    with driver_for(builder) as driver:
        store = driver.get_key_value_store("changes")
        for step, (_, changes) in enumerate(zip(_pipe_steps(driver), CHANGES[how])):
            for key, new, old in changes:
                log = expected.get(key, "")
                if old is not None:
                    log += f" -[{old}]"
                if new is not None:
                    log += f" +[{new}]"
                expected[key] = log
            assert dict(store.all()) == expected, f"{KAFKA_TEST[how]}, after step {step + 1}"


def test_queryable_join_store_after_every_step():
    """KTableKTableInnerJoinTest.testQueryableJoin (and testQueryableNotSendingOldValues): the
    materialized join, all eight steps of doTestJoin; the output is Kafka's, and the store
    holds after every step exactly the rows the output says are live."""
    builder = StreamsBuilder()
    table1 = builder.table("topic1", consumed=CONSUMED)
    table2 = builder.table("topic2", consumed=CONSUMED)
    table1.join(table2, tostring_joiner, materialized=Materialized.as_("joined").with_value_serde(S)) \
        .to_stream().to("output", produced=Produced.with_(I, S))
    expected_output = [
        [],
        [(0, "X0+Y0", 5), (1, "X1+Y1", 10)],
        [(0, "XX0+Y0", 7), (1, "XX1+Y1", 10)],
        [(0, "XX0+YY0", 7), (1, "XX1+YY1", 7), (2, "XX2+YY2", 10), (3, "XX3+YY3", 15)],
        [(0, "XXX0+YY0", 6), (1, "XXX1+YY1", 6), (2, "XXX2+YY2", 10), (3, "XXX3+YY3", 15)],
        [(0, None, 6), (1, None, 7)],
        [(2, "XXXX2+YY2", 13), (3, "XXXX3+YY3", 15)],
        [(2, None, 10), (3, None, 20)],
    ]
    with driver_for(builder) as driver:
        out = driver.create_output_topic("output", I, S)
        store = driver.get_key_value_store("joined")
        live: dict[int, str] = {}
        for step, (_, expected) in enumerate(zip(_pipe_steps(driver), expected_output)):
            assert kvt(out.read_records_to_list()) == expected, f"after step {step + 1}"
            for key, value, _ in expected:
                if value is None:
                    live.pop(key, None)
                else:
                    live[key] = value
            assert sorted(store.all()) == sorted(live.items()), f"after step {step + 1}"
            for key in KEYS:
                assert store.get(key) == live.get(key)
        assert driver.metrics()["dropped_records"] == 2


def _upper(value):
    return value.upper()


@pytest.mark.parametrize("materialize_eight", [False, True], ids=["as_in_kafka", "eight_materialized"])
def test_left_join_chain_with_multi_cache_evictions(materialize_eight):
    """KTableKTableLeftJoinTest.shouldNotThrowIllegalStateExceptionWhenMultiCacheEvictions
    (KAFKA-4492): a re-grouped reduce left-joined with five tables and with a left join of two
    more (one of them map_values'd), then map_values; random keys and values on all seven
    topics must process without error. (Kafka pipes 1000 rounds and checks only that; here
    80 rounds over 40 keys with a fixed seed, and the final result per key is also checked against the
    tables' final contents.) ``as_in_kafka`` is the port: the last join joins two
    unmaterialized join results. ``eight_materialized`` (not in Kafka) names the store of
    the inner join result, to check the chain's values apart from how stores are named."""
    inputs = ["agg", "tableOne", "tableTwo", "tableThree", "tableFour", "tableFive", "tableSix"]
    consumed = Consumed.with_(L, S)
    builder = StreamsBuilder()
    agg_table = builder.table("agg", consumed=consumed, materialized=Materialized.as_("agg-base-store")) \
        .group_by(lambda k, v: (k, v), Grouped.with_(L, S)) \
        .reduce(lambda a, b: f"{a}+{b}", lambda a, b: f"{a}+{b}", materialized=Materialized.as_("agg-store"))
    one, two, three, four, five, six = (
        builder.table(t, consumed=consumed, materialized=Materialized.as_(f"{t}-base-store")) for t in inputs[1:])
    seven = one.map_values(_upper)
    eight = six.left_join(seven, tostring_joiner, materialized=(
        Materialized.as_("eight").with_value_serde(S) if materialize_eight else None))
    agg_table.left_join(one, tostring_joiner).left_join(two, tostring_joiner).left_join(three, tostring_joiner) \
        .left_join(four, tostring_joiner).left_join(five, tostring_joiner).left_join(eight, tostring_joiner) \
        .map_values(_upper).to_stream().to("output", produced=Produced.with_(L, S))

    values = ["a", "AA", "BBB", "CCCC", "DD", "EEEEEEEE", "F", "GGGGGGGGGGGGGGG", "HHH", "IIIIIIIIII", "J", "KK",
              "LLLL", "MMMMMMMMMMMMMMMMMMMMMM", "NNNNN", "O", "P", "QQQQQ", "R", "SSSS", "T", "UU",
              "VVVVVVVVVVVVVVVVVVV"]
    rng = random.Random(4492)
    tables: dict[str, dict[int, str]] = {t: {} for t in inputs}
    aggregate: dict[int, str] = {}
    with driver_for(builder) as driver:
        topics = {t: driver.create_input_topic(t, L, S) for t in inputs}
        for _ in range(80):
            for topic in inputs:
                key, value = rng.randrange(40), rng.choice(values)
                topics[topic].pipe_input(key, value, 0)
                if topic == "agg":   # reduce: subtract the old value (adder == subtractor here), add the new
                    old = tables["agg"].get(key)
                    current = aggregate.get(key)
                    if old is not None and current is not None:
                        current = f"{current}+{old}"
                    aggregate[key] = value if current is None else f"{current}+{value}"
                tables[topic][key] = value
        last = dict(driver.create_output_topic("output", L, S).read_key_values_to_list())

    def get(name, key):
        return tables[name].get(key)

    def eight_value(key):
        if key not in tables["tableSix"]:
            return None
        one_value = get("tableOne", key)
        return tostring_joiner(get("tableSix", key), None if one_value is None else one_value.upper())

    expected = {}
    for key, agg_value in aggregate.items():
        result = agg_value
        for name in inputs[1:6]:
            result = tostring_joiner(result, get(name, key))
        expected[key] = tostring_joiner(result, eight_value(key)).upper()
    assert last == expected
