"""Tumbling/hopping windowed aggregation, ported from Kafka Streams'
``streams/src/test/java/org/apache/kafka/streams/kstream/internals/KStreamWindowAggregateTest.java``.

Kafka parameterises each test over emit strategy (on update / on close) and caching; the
TopologyTestDriver emits every update (Kafka's driver commits after each record), so the
cached and uncached variants expect the same records and are ported once. Expected
records are Kafka's ``KeyValueTimestamp`` lists, verbatim. Log-message and metric-name
checks are Java-only and left out; the dropped counts they pin are ported via
``metrics()["dropped_records"]``. (Tests pending the windowed DSL.)
"""
import pytest

from streamlib import EmitStrategy, Produced, StreamsBuilder, TimeWindows

from streams_helpers import S, driver_for, kvt
from windowed_helpers import (run, store, string_adder, string_init, time_windowed, to_output,
                              windowed_stream, wkvt)

UPDATE, CLOSE = EmitStrategy.on_window_update(), EmitStrategy.on_window_close()
STRATEGIES = pytest.mark.parametrize("emit", [UPDATE, CLOSE], ids=["on_update", "on_close"])
W10 = time_windowed(10)

AGG_BASIC_INPUT = [("A", "1", 0), ("B", "2", 1), ("C", "3", 2), ("D", "4", 3), ("A", "1", 4), ("A", "1", 5),
                   ("B", "2", 6), ("D", "4", 7), ("B", "2", 8), ("C", "3", 9), ("A", "1", 10), ("B", "2", 11),
                   ("D", "4", 12), ("B", "2", 13), ("C", "3", 14), ("B", "1", 3), ("B", "2", 2), ("B", "3", 9)]


def _hopping_agg(builder, topic, store_name, emit, grace, advance=5):
    return windowed_stream(builder, topic) \
        .windowed_by(TimeWindows.of(10, grace=grace).advance_by(advance)) \
        .emit_strategy(emit) \
        .aggregate(string_init, string_adder, materialized=store(store_name))


@STRATEGIES
def test_agg_basic(emit):
    """KStreamWindowAggregateTest.testAggBasic: hopping windows (10, advance 5, grace 100); each
    record updates its windows in ascending start order; the result timestamp is the max record
    timestamp in the window; out-of-order records (B@3, B@2, B@9) still update open windows.
    With emit-on-close nothing is emitted: grace 100 keeps every window open."""
    builder = StreamsBuilder()
    to_output(_hopping_agg(builder, "topic1", "topic1-Canonized", emit, grace=100), "out", W10)
    out, _ = run(builder, [("topic1", k, v, ts) for k, v, ts in AGG_BASIC_INPUT], {"out": (W10, S)})
    if emit == CLOSE:
        assert out["out"] == []
        return
    assert out["out"] == [
        wkvt("A", 0, 10, "0+1", 0), wkvt("B", 0, 10, "0+2", 1), wkvt("C", 0, 10, "0+3", 2),
        wkvt("D", 0, 10, "0+4", 3), wkvt("A", 0, 10, "0+1+1", 4),
        wkvt("A", 0, 10, "0+1+1+1", 5), wkvt("A", 5, 15, "0+1", 5),
        wkvt("B", 0, 10, "0+2+2", 6), wkvt("B", 5, 15, "0+2", 6),
        wkvt("D", 0, 10, "0+4+4", 7), wkvt("D", 5, 15, "0+4", 7),
        wkvt("B", 0, 10, "0+2+2+2", 8), wkvt("B", 5, 15, "0+2+2", 8),
        wkvt("C", 0, 10, "0+3+3", 9), wkvt("C", 5, 15, "0+3", 9),
        wkvt("A", 5, 15, "0+1+1", 10), wkvt("A", 10, 20, "0+1", 10),
        wkvt("B", 5, 15, "0+2+2+2", 11), wkvt("B", 10, 20, "0+2", 11),
        wkvt("D", 5, 15, "0+4+4", 12), wkvt("D", 10, 20, "0+4", 12),
        wkvt("B", 5, 15, "0+2+2+2+2", 13), wkvt("B", 10, 20, "0+2+2", 13),
        wkvt("C", 5, 15, "0+3+3", 14), wkvt("C", 10, 20, "0+3", 14),
        wkvt("B", 0, 10, "0+2+2+2+1", 8),
        wkvt("B", 0, 10, "0+2+2+2+1+2", 8),
        wkvt("B", 0, 10, "0+2+2+2+1+2+3", 9), wkvt("B", 5, 15, "0+2+2+2+2+3", 13),
    ]


def test_agg_basic_store_contents():
    """KStreamWindowAggregateTest.testAggBasic, the window store after the run: fetch(key, from, to)
    returns (window_start, value) for the windows whose start is in [from, to], by start."""
    builder = StreamsBuilder()
    _hopping_agg(builder, "topic1", "topic1-Canonized", UPDATE, grace=100)
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic1", S, S)
        for k, v, ts in AGG_BASIC_INPUT:
            inp.pipe_input(k, v, ts)
        ws = driver.get_window_store("topic1-Canonized")
        assert list(ws.fetch("B", 0, 100)) == [(0, "0+2+2+2+1+2+3"), (5, "0+2+2+2+2+3"), (10, "0+2+2")]
        assert list(ws.fetch("B", 1, 9)) == [(5, "0+2+2+2+2+3")]
        assert list(ws.fetch("A", 0, 10)) == [(0, "0+1+1+1"), (5, "0+1+1"), (10, "0+1")]
        assert list(ws.fetch("E", 0, 100)) == []


def _join_topology(emit, grace):
    builder = StreamsBuilder()
    t1 = _hopping_agg(builder, "topic1", "topic1-Canonized", emit, grace)
    t2 = _hopping_agg(builder, "topic2", "topic2-Canonized", emit, grace)
    to_output(t1, "out1", W10)
    to_output(t2, "out2", W10)
    to_output(t1.join(t2, lambda p1, p2: f"{p1}%{p2}"), "joined", W10)
    return builder


def _pipe_and_read(driver, topic, records):
    inp = driver.create_input_topic(topic, S, S)
    for k, v, ts in records:
        inp.pipe_input(k, v, ts)
    return [kvt(driver.create_output_topic(t, W10, S).read_records_to_list()) for t in ("out1", "out2", "joined")]


def test_join_emit_on_update():
    """KStreamWindowAggregateTest.testJoin (ON_WINDOW_UPDATE, processEmitUpdateJoin): two windowed
    aggregations joined as tables on their Windowed keys; the join result's timestamp is the max
    of both sides'."""
    with driver_for(_join_topology(UPDATE, grace=100)) as driver:
        out1, out2, joined = _pipe_and_read(driver, "topic1", [("A", "1", 0), ("B", "2", 1), ("C", "3", 2),
                                                               ("D", "4", 3), ("A", "1", 9)])
        assert out1 == [wkvt("A", 0, 10, "0+1", 0), wkvt("B", 0, 10, "0+2", 1), wkvt("C", 0, 10, "0+3", 2),
                        wkvt("D", 0, 10, "0+4", 3), wkvt("A", 0, 10, "0+1+1", 9), wkvt("A", 5, 15, "0+1", 9)]
        assert out2 == [] and joined == []

        out1, out2, joined = _pipe_and_read(driver, "topic1", [("A", "1", 5), ("B", "2", 6), ("D", "4", 7),
                                                               ("B", "2", 8), ("C", "3", 9)])
        assert out1 == [wkvt("A", 0, 10, "0+1+1+1", 9), wkvt("A", 5, 15, "0+1+1", 9),
                        wkvt("B", 0, 10, "0+2+2", 6), wkvt("B", 5, 15, "0+2", 6),
                        wkvt("D", 0, 10, "0+4+4", 7), wkvt("D", 5, 15, "0+4", 7),
                        wkvt("B", 0, 10, "0+2+2+2", 8), wkvt("B", 5, 15, "0+2+2", 8),
                        wkvt("C", 0, 10, "0+3+3", 9), wkvt("C", 5, 15, "0+3", 9)]
        assert out2 == [] and joined == []

        out1, out2, joined = _pipe_and_read(driver, "topic2", [("A", "a", 0), ("B", "b", 1), ("C", "c", 2),
                                                               ("D", "d", 20), ("A", "a", 20)])
        assert out1 == []
        assert out2 == [wkvt("A", 0, 10, "0+a", 0), wkvt("B", 0, 10, "0+b", 1), wkvt("C", 0, 10, "0+c", 2),
                        wkvt("D", 15, 25, "0+d", 20), wkvt("D", 20, 30, "0+d", 20),
                        wkvt("A", 15, 25, "0+a", 20), wkvt("A", 20, 30, "0+a", 20)]
        assert joined == [wkvt("A", 0, 10, "0+1+1+1%0+a", 9), wkvt("B", 0, 10, "0+2+2+2%0+b", 8),
                          wkvt("C", 0, 10, "0+3+3%0+c", 9)]

        out1, out2, joined = _pipe_and_read(driver, "topic2", [("A", "a", 5), ("B", "b", 6), ("D", "d", 7),
                                                               ("D", "d", 18), ("A", "a", 21)])
        assert out1 == []
        assert out2 == [wkvt("A", 0, 10, "0+a+a", 5), wkvt("A", 5, 15, "0+a", 5),
                        wkvt("B", 0, 10, "0+b+b", 6), wkvt("B", 5, 15, "0+b", 6),
                        wkvt("D", 0, 10, "0+d", 7), wkvt("D", 5, 15, "0+d", 7),
                        wkvt("D", 10, 20, "0+d", 18), wkvt("D", 15, 25, "0+d+d", 20),
                        wkvt("A", 15, 25, "0+a+a", 21), wkvt("A", 20, 30, "0+a+a", 21)]
        assert joined == [wkvt("A", 0, 10, "0+1+1+1%0+a+a", 9), wkvt("A", 5, 15, "0+1+1%0+a", 9),
                          wkvt("B", 0, 10, "0+2+2+2%0+b+b", 8), wkvt("B", 5, 15, "0+2+2%0+b", 8),
                          wkvt("D", 0, 10, "0+4+4%0+d", 7), wkvt("D", 5, 15, "0+4%0+d", 7)]


def test_join_emit_on_close():
    """KStreamWindowAggregateTest.testJoin (ON_WINDOW_CLOSE, processEmitFinalJoin, without cache):
    grace 5; a window's final value is emitted once stream time reaches end + grace, in (window
    start, key) order, with the window's own (max record) timestamp. The join looks the other
    side up in its window store, which hides windows that retention (size + grace = 15) expired:
    for emit-on-close stores Kafka's time-first schema treats start < observed - retention as
    gone, so topic1's [0,10) (observed start 20) no longer joins, but [5,15) does."""
    with driver_for(_join_topology(CLOSE, grace=5)) as driver:
        out1, out2, joined = _pipe_and_read(driver, "topic1", [("A", "1", 0), ("B", "2", 1), ("C", "3", 2),
                                                               ("D", "4", 3), ("A", "1", 9), ("A", "1", 15)])
        assert out1 == [wkvt("A", 0, 10, "0+1+1", 9), wkvt("B", 0, 10, "0+2", 1),
                        wkvt("C", 0, 10, "0+3", 2), wkvt("D", 0, 10, "0+4", 3)]
        assert out2 == [] and joined == []

        out1, out2, joined = _pipe_and_read(driver, "topic1", [("A", "1", 10), ("B", "2", 11), ("D", "4", 12),
                                                               ("B", "2", 13), ("C", "3", 14), ("A", "1", 20)])
        assert out1 == [wkvt("A", 5, 15, "0+1+1", 10), wkvt("B", 5, 15, "0+2+2", 13),
                        wkvt("C", 5, 15, "0+3", 14), wkvt("D", 5, 15, "0+4", 12)]
        assert out2 == [] and joined == []

        out1, out2, joined = _pipe_and_read(driver, "topic2", [("A", "a", 0), ("B", "b", 1), ("C", "c", 2),
                                                               ("D", "d", 10), ("A", "a", 15)])
        # Kafka's uncached variant checks only that topic1's side and the join stay silent here.
        assert out1 == [] and joined == []
        assert out2 == [wkvt("A", 0, 10, "0+a", 0), wkvt("B", 0, 10, "0+b", 1), wkvt("C", 0, 10, "0+c", 2)]
        # The first-stream windows [0,10) were emitted (and joined against nothing) earlier.

        out1, out2, joined = _pipe_and_read(driver, "topic2", [("A", "a", 5), ("B", "b", 6), ("D", "d", 7),
                                                               ("D", "d", 18), ("A", "a", 21)])
        assert out1 == []
        assert out2 == [wkvt("A", 5, 15, "0+a", 5), wkvt("B", 5, 15, "0+b", 6), wkvt("D", 5, 15, "0+d+d", 10)]
        assert joined == [wkvt("A", 5, 15, "0+1+1%0+a", 10), wkvt("B", 5, 15, "0+2+2%0+b", 13),
                          wkvt("D", 5, 15, "0+4%0+d+d", 12)]


@STRATEGIES
def test_skips_and_counts_null_keys(emit):
    """KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingNullKey: a null key is skipped and
    counted in dropped_records."""
    builder = StreamsBuilder()
    agg = windowed_stream(builder, "topic").windowed_by(TimeWindows.of(10).advance_by(5)).emit_strategy(emit) \
        .aggregate(string_init, string_adder, materialized=store("topic1-Canonicalized"))
    to_output(agg, "out", W10)
    out, metrics = run(builder, [("topic", None, "1", 0)], {"out": (W10, S)})
    assert out["out"] == []
    assert metrics["dropped_records"] == 1


def _expired_topology(emit, advance):
    builder = StreamsBuilder()
    windowed_stream(builder, "topic") \
        .windowed_by(TimeWindows.of(10, grace=90).advance_by(advance)).emit_strategy(emit) \
        .aggregate(lambda: "", string_adder, materialized=store("topic1-Canonicalized")) \
        .to_stream().map(lambda k, v: (f"[{k.key}@{k.window.start}/{k.window.end}]", v)) \
        .to("output", produced=Produced.with_(S, S))
    return builder


@STRATEGIES
def test_skips_records_for_expired_windows(emit):
    """KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindow: size 10, advance 5,
    grace 90. At stream time 100 window [0,10) is closed (10 + 90 <= 100): records 0..6 are
    dropped from it (7 drops: 5 and 6 still update the open window [5,15)). With emit-on-close,
    [5,15) closes at stream time 105 and is emitted once with timestamp 6."""
    records = [("k", "100", 100), ("k", "0", 0), ("k", "1", 1), ("k", "2", 2), ("k", "3", 3), ("k", "4", 4),
               ("k", "5", 5), ("k", "6", 6), ("k", "105", 105), ("k", "106", 106)]
    out, metrics = run(_expired_topology(emit, 5), [("topic",) + r for r in records], {"output": (S, S)})
    assert metrics["dropped_records"] == 7
    if emit == CLOSE:
        assert out["output"] == [("[k@5/15]", "+5+6", 6)]
    else:
        assert out["output"] == [("[k@95/105]", "+100", 100), ("[k@100/110]", "+100", 100),
                                 ("[k@5/15]", "+5", 5), ("[k@5/15]", "+5+6", 6),
                                 ("[k@100/110]", "+100+105", 105), ("[k@105/115]", "+105", 105),
                                 ("[k@100/110]", "+100+105+106", 106), ("[k@105/115]", "+105+106", 106)]


@STRATEGIES
def test_skips_records_for_windows_expired_by_grace(emit):
    """KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace: tumbling 10,
    grace 90; at stream time 200 windows [100,110) and [0,10) are closed: 7 records dropped."""
    records = [("k", "100", 200), ("k", "0", 100), ("k", "1", 101), ("k", "2", 102), ("k", "3", 103),
               ("k", "4", 104), ("k", "5", 105), ("k", "6", 6)]
    out, metrics = run(_expired_topology(emit, 10), [("topic",) + r for r in records], {"output": (S, S)})
    assert metrics["dropped_records"] == 7
    assert out["output"] == ([] if emit == CLOSE else [("[k@200/210]", "+100", 200)])


def _grace5_driver(builder_emit):
    builder = StreamsBuilder()
    agg = windowed_stream(builder, "topic1").windowed_by(TimeWindows.of(10, grace=5).advance_by(5)) \
        .emit_strategy(builder_emit).aggregate(string_init, string_adder, materialized=store("dummy-store-name"))
    to_output(agg, "out", W10)
    return builder


@STRATEGIES
def test_not_emit_final_if_not_progress_enough(emit):
    """KStreamWindowAggregateTest.shouldNotEmitFinalIfNotProgressEnough: size 10, advance 5,
    grace 5; windows close at end + 5; no stream-time progress, no final result."""
    with driver_for(_grace5_driver(emit)) as driver:
        inp = driver.create_input_topic("topic1", S, S)
        out = driver.create_output_topic("out", W10, S)
        for k, v, ts in [("A", "1", 0), ("B", "2", 5), ("C", "3", 15)]:
            inp.pipe_input(k, v, ts)
        if emit == CLOSE:
            assert kvt(out.read_records_to_list()) == [wkvt("A", 0, 10, "0+1", 0), wkvt("B", 0, 10, "0+2", 5)]
        else:
            assert kvt(out.read_records_to_list()) == [
                wkvt("A", 0, 10, "0+1", 0), wkvt("B", 0, 10, "0+2", 5), wkvt("B", 5, 15, "0+2", 5),
                wkvt("C", 10, 20, "0+3", 15), wkvt("C", 15, 25, "0+3", 15)]
        inp.pipe_input("D", "4", 15)
        assert kvt(out.read_records_to_list()) == ([] if emit == CLOSE else [
            wkvt("D", 10, 20, "0+4", 15), wkvt("D", 15, 25, "0+4", 15)])
        inp.pipe_input("E", "5", 19)
        assert kvt(out.read_records_to_list()) == ([] if emit == CLOSE else [
            wkvt("E", 10, 20, "0+5", 19), wkvt("E", 15, 25, "0+5", 19)])


@STRATEGIES
def test_emit_with_interval_0(emit):
    """KStreamWindowAggregateTest.shouldEmitWithInterval0 (and shouldEmitFromLastEmitTime's first
    step): every closed window is emitted once, in (window start, key) order."""
    with driver_for(_grace5_driver(emit)) as driver:
        inp = driver.create_input_topic("topic1", S, S)
        for k, v, ts in [("A", "1", 0), ("A", "1", 5), ("B", "2", 10), ("C", "3", 15), ("D", "4", 20)]:
            inp.pipe_input(k, v, ts)
        out = kvt(driver.create_output_topic("out", W10, S).read_records_to_list())
    if emit == CLOSE:
        assert out == [wkvt("A", 0, 10, "0+1+1", 5), wkvt("A", 5, 15, "0+1", 5), wkvt("B", 5, 15, "0+2", 10)]
    else:
        assert out == [wkvt("A", 0, 10, "0+1", 0), wkvt("A", 0, 10, "0+1+1", 5), wkvt("A", 5, 15, "0+1", 5),
                       wkvt("B", 5, 15, "0+2", 10), wkvt("B", 10, 20, "0+2", 10),
                       wkvt("C", 10, 20, "0+3", 15), wkvt("C", 15, 25, "0+3", 15),
                       wkvt("D", 15, 25, "0+4", 20), wkvt("D", 20, 30, "0+4", 20)]


def _hopping_brute_force(records, size: int, advance: int, grace: int):
    """Hopping windows from their definition: a record at t belongs to every [s, s + size) with
    s % advance == 0 and 0 <= s <= t < s + size; a window closed (end <= stream time - grace)
    drops it, counted once per window. On close a window is emitted when it closes unless the
    store has already expired it by then (Kafka's time-first store hides starts below its largest
    stored start - (size + grace)). Returns ({(key, start): (sorted values, max ts)}, dropped
    count, the windows emitted on close)."""
    contents, observed, dropped, store_time, decided, emitted = {}, -1, 0, -1, set(), set()
    for key, value, ts in records:
        observed = max(observed, ts)
        for s in range(max(0, ts - size + advance) // advance * advance, ts + 1, advance):
            if s + size <= observed - grace:
                dropped += 1
            else:
                values, max_ts = contents.get((key, s), ([], ts))
                contents[(key, s)] = (values + [value], max(max_ts, ts))
                store_time = max(store_time, s)
        for window in contents.keys() - decided:
            if window[1] + size <= observed - grace:
                decided.add(window)
                if window[1] >= store_time - size - grace:
                    emitted.add(window)
    return ({k: (",".join(sorted(v)), t) for k, (v, t) in contents.items()}, dropped, emitted)


@STRATEGIES
@pytest.mark.parametrize("seed", range(4))
def test_hopping_random_input_matches_brute_force(emit, seed):
    """Random multi-key input with out-of-order and late records over hopping windows against the
    brute-force model (no Kafka counterpart; KStreamWindowAggregateTest's rules at scale). On
    update the last value of every window is the model's; on close each closed window is emitted
    exactly once with its final value (unless retention expired it first, as in Kafka); every
    closed window a record missed is counted as dropped."""
    import random
    from windowed_helpers import random_stream
    rng = random.Random(seed)
    size, advance, grace = rng.choice([(10, 5, 20), (30, 10, 40), (20, 20, 10)])
    records = random_stream(rng, 300, 3, size, grace)
    builder = StreamsBuilder()
    table = windowed_stream(builder, "topic").windowed_by(TimeWindows.of(size, grace=grace).advance_by(advance)) \
        .emit_strategy(emit).aggregate(lambda: "", lambda k, v, agg: ",".join(sorted(agg.split(",") + [v]))
                                       if agg else v, materialized=store("hopping"))
    serde = time_windowed(size)
    to_output(table, "out", serde)
    out, metrics = run(builder, [("topic", k, v, ts) for k, v, ts in records], {"out": (serde, S)})
    expected, dropped, emitted = _hopping_brute_force(records, size, advance, grace)
    assert metrics["dropped_records"] == dropped, f"seed {seed}"
    got = {(w.key, w.window.start): (value, ts) for w, value, ts in out["out"]}
    if emit == UPDATE:
        assert got == expected, f"seed {seed}"
    else:
        assert len(got) == len(out["out"]), f"seed {seed}: a window emitted twice"
        assert got == {k: v for k, v in expected.items() if k in emitted}, f"seed {seed}"
