"""Windowed aggregations: the expectations of Kafka Streams' integration tests
(``streams/src/test/java/org/apache/kafka/streams/integration/``)
``KStreamAggregationIntegrationTest``, ``TimeWindowedKStreamIntegrationTest`` and
``SlidingWindowedKStreamIntegrationTest``, plus the unit-test methods not ported yet
(``KStreamSessionWindowAggregateProcessorTest.shouldGetAggregatedValuesFromValueGetter``).

How they are adapted to the TopologyTestDriver:

- Kafka runs them against a broker with ``statestore.cache.max.bytes=0`` (every update
  is forwarded, whatever ``Materialized.withCachingEnabled`` says) and, for the two
  ``*WindowedKStreamIntegrationTest`` classes, ``emit.interval.ms.kstreams.windowed.aggregation=0``.
  That is exactly what our driver does, so the expected records are Kafka's, verbatim.
  The ``withCache`` parameter is kept (``Materialized`` default vs ``with_caching_disabled()``)
  to pin that it changes nothing.
- The records Kafka produces before ``start()`` are piped in the order Kafka's task
  processes them: by timestamp over the input partitions (ties: the first topic first),
  in offset order within a partition.
- ``MockTime`` starts at the wall clock; a fixed ``NOW`` stands in for it.
- ``shouldRestoreAfterJoinRestart``: the driver cannot stop, wipe its state and restart,
  so the second phase continues on the same driver; the results after a restore must be
  the same (restoration is tested elsewhere).
- Where Kafka collects ``results.put(key, ...)`` in a map (session tests), the last
  (value, timestamp) per windowed key of the output topic is compared.
- The ConsoleConsumer cross-check (the same records printed) and the ``UnlimitedWindows``
  tests have no counterpart (no ``UnlimitedWindows`` in the API).
"""
import pytest

from streamlib import (Consumed, EmitStrategy, Grouped, JoinWindows, Materialized, Produced, Serdes,
                       SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows, Window, Windowed)

from streams_helpers import I, L, S, driver_for, kvt
from windowed_helpers import string_adder, string_init

UPDATE, CLOSE = EmitStrategy.on_window_update(), EmitStrategy.on_window_close()
STRATEGIES = pytest.mark.parametrize("emit", [UPDATE, CLOSE], ids=["on_update", "on_close"])
CACHE = pytest.mark.parametrize("with_cache", [True, False], ids=["cache", "no_cache"])

#: stands in for Kafka's ``MockTime.milliseconds()`` (not a multiple of 500 on purpose)
NOW = 1_729_800_123_456


def w(key, start, end):
    """``new Windowed<>(key, new TimeWindow(start, end))`` / ``new SessionWindow(start, end)``."""
    return Windowed(key, Window(start, end))


# --- KStreamAggregationIntegrationTest -------------------------------------------------------

#: KStreamAggregationIntegrationTest.produceMessages: Integer keys, String values
MESSAGES = [(1, "A"), (2, "B"), (3, "C"), (4, "D"), (5, "E")]


def _grouped_by_value(builder):
    """``stream.groupBy(MockMapper.selectValueMapper(), Grouped.with(String, String))``."""
    return builder.stream("stream-one", consumed=Consumed.with_(I, S)) \
        .group_by(lambda k, v: v, grouped=Grouped.with_(S, S))


def _pipe_batches(driver, timestamps, topic="stream-one"):
    inp = driver.create_input_topic(topic, I, S)
    for ts in timestamps:
        for k, v in MESSAGES:
            inp.pipe_input(k, v, ts)


def _sorted_by_key_then_value(records):
    """Kafka's comparator: ``key().key()``, then value (List.sort is stable)."""
    return sorted(records, key=lambda r: (r[0].key, r[1]))


def _run_grouped(builder, timestamps, out_key_serde, out_value_serde):
    with driver_for(builder) as driver:
        _pipe_batches(driver, timestamps)
        return kvt(driver.create_output_topic("output", out_key_serde, out_value_serde).read_records_to_list())


def _time_windowed_expected(first, second, single, double):
    fs, ss = first // 500 * 500, second // 500 * 500
    out = []
    for key in "ABCDE":
        out += [(w(key, fs, fs + 500), single(key), first), (w(key, ss, ss + 500), single(key), second),
                (w(key, ss, ss + 500), double(key), second)]
    return out


def test_reduce_windowed():
    """KStreamAggregationIntegrationTest.shouldReduceWindowed: tumbling 500 ms, grace 1 min,
    reduce ``v1 + ":" + v2``; one batch at t, two at t + 1000."""
    first, second = NOW, NOW + 1000
    tw = Serdes.time_windowed(S, 500)
    builder = StreamsBuilder()
    _grouped_by_value(builder).windowed_by(TimeWindows.of_size_and_grace(500, 60_000)) \
        .reduce(lambda a, b: f"{a}:{b}").to_stream().to("output", produced=Produced.with_(tw, S))
    out = _run_grouped(builder, [first, second, second], tw, S)
    assert _sorted_by_key_then_value(out) == _time_windowed_expected(first, second, lambda k: k, lambda k: f"{k}:{k}")


def test_aggregate_windowed():
    """KStreamAggregationIntegrationTest.shouldAggregateWindowed: tumbling 500 ms, grace 1 min,
    ``aggregate(() -> 0, (k, v, agg) -> agg + v.length(), Materialized.with(null, Integer))``."""
    first, second = NOW, NOW + 1000
    tw = Serdes.time_windowed(S, 500)
    builder = StreamsBuilder()
    _grouped_by_value(builder).windowed_by(TimeWindows.of_size_and_grace(500, 60_000)) \
        .aggregate(lambda: 0, lambda k, v, agg: agg + len(v), materialized=Materialized.with_(None, I)) \
        .to_stream().to("output", produced=Produced.with_(tw, I))
    out = _run_grouped(builder, [first, second, second], tw, I)
    assert _sorted_by_key_then_value(out) == _time_windowed_expected(first, second, lambda k: 1, lambda k: 2)


def test_group_by_key_windowed_count():
    """KStreamAggregationIntegrationTest.shouldGroupByKey: ``groupByKey(Grouped.with(Integer,
    String))``, tumbling 500 ms without grace, count, ``toStream((wk, v) -> wk.key() + "@" +
    wk.window().start())``; two batches at the same timestamp."""
    ts = NOW
    builder = StreamsBuilder()
    builder.stream("stream-one", consumed=Consumed.with_(I, S)).group_by_key(grouped=Grouped.with_(I, S)) \
        .windowed_by(TimeWindows.of_size_with_no_grace(500)).count() \
        .to_stream(lambda wk, v: f"{wk.key}@{wk.window.start}").to("output", produced=Produced.with_(S, L))
    out = _run_grouped(builder, [ts, ts], S, L)
    window = ts // 500 * 500
    assert sorted(out, key=lambda r: (r[0], r[1])) == [
        (f"{k}@{window}", n, ts) for k in range(1, 6) for n in (1, 2)]


def _sliding_expected(first, second, third, values):
    """The six records per key of shouldReduce/AggregateSlidingWindows, in Kafka's sorted
    order; ``values`` = (1 record, 2 records, 3 records) for a key."""
    diff = 500
    fl, fr = (first - diff, first), (first + 1, first + 1 + diff)
    sl, sr = (second - diff, second), (second + 1, second + 1 + diff)
    tl = (third - diff, third)
    one, two, three = values
    out = []
    for key in "ABCDE":
        out += [(w(key, *fl), one(key), first),    # A@first's left window, created by A@first
                (w(key, *fr), one(key), second),   # A@first's right window, created by A@second
                (w(key, *sr), one(key), third),    # A@second's right window, created by A@third
                (w(key, *sl), two(key), second),   # A@second's left window
                (w(key, *fr), two(key), third),    # A@first's right window, updated by A@third
                (w(key, *tl), three(key), third)]  # A@third's left window
    return out


def test_reduce_sliding_windows():
    """KStreamAggregationIntegrationTest.shouldReduceSlidingWindows: time difference 500, grace
    2 s; batches at t, t + 250, t + 400."""
    first, second, third = NOW, NOW + 250, NOW + 400
    tw = Serdes.time_windowed(S, 500)
    builder = StreamsBuilder()
    _grouped_by_value(builder).windowed_by(SlidingWindows.of_time_difference_and_grace(500, 2000)) \
        .reduce(lambda a, b: f"{a}:{b}").to_stream().to("output", produced=Produced.with_(tw, S))
    out = _run_grouped(builder, [first, second, third], tw, S)
    assert _sorted_by_key_then_value(out) == _sliding_expected(
        first, second, third, (lambda k: k, lambda k: f"{k}:{k}", lambda k: f"{k}:{k}:{k}"))


def test_aggregate_sliding_windows():
    """KStreamAggregationIntegrationTest.shouldAggregateSlidingWindows: time difference 500,
    grace 5 min, the value-length aggregator."""
    first, second, third = NOW, NOW + 250, NOW + 400
    tw = Serdes.time_windowed(S, 500)
    builder = StreamsBuilder()
    _grouped_by_value(builder).windowed_by(SlidingWindows.of_time_difference_and_grace(500, 300_000)) \
        .aggregate(lambda: 0, lambda k, v, agg: agg + len(v), materialized=Materialized.with_(None, I)) \
        .to_stream().to("output", produced=Produced.with_(tw, I))
    out = _run_grouped(builder, [first, second, third], tw, I)
    assert _sorted_by_key_then_value(out) == _sliding_expected(
        first, second, third, (lambda k: 1, lambda k: 2, lambda k: 3))


def _user_sessions(t1, gap):
    """The user-sessions input of shouldCount/ReduceSessionWindows, in processing order."""
    t2 = t1 + gap // 2
    t3 = t1 + gap + 1
    t4 = t3 + gap // 2
    t5 = t4 - 1
    records = [("bob", "start", t1), ("penny", "start", t1), ("jo", "pause", t1), ("emily", "pause", t1),
               ("emily", "resume", t2),
               ("bob", "pause", t3), ("penny", "stop", t3),
               ("bob", "resume", t4),   # bob's session continues
               ("jo", "resume", t4),    # jo's starts a new session
               ("jo", "late", t5)]      # jo has a late arrival
    return records, (t1, t2, t3, t4, t5)


def _run_sessions(builder, records, value_serde, store=None):
    ssw = Serdes.session_windowed(S)
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("user-sessions", S, S)
        for k, v, ts in records:
            inp.pipe_input(k, v, ts)
        out = kvt(driver.create_output_topic("output", ssw, value_serde).read_records_to_list())
        fetched = driver.get_session_store(store).fetch_sessions("bob") if store else None
    last = {key: (value, ts) for key, value, ts in out}
    return out, last, fetched


def test_count_session_windows():
    """KStreamAggregationIntegrationTest.shouldCountSessionWindows: gap 5 min, no grace. Kafka
    waits for 13 records (uncached: 7 sessions, 3 merged away as tombstones, 3 merges) and
    checks the last value per session."""
    gap = 5 * 60 * 1000
    records, (t1, t2, t3, t4, t5) = _user_sessions(NOW - 3_600_000, gap)
    builder = StreamsBuilder()
    builder.stream("user-sessions", consumed=Consumed.with_(S, S)).group_by_key(grouped=Grouped.with_(S, S)) \
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(gap)).count() \
        .to_stream().to("output", produced=Produced.with_(Serdes.session_windowed(S), L))
    out, last, _ = _run_sessions(builder, records, L)
    assert len(out) == 13
    assert last[w("bob", t1, t1)] == (1, t1)
    assert last[w("penny", t1, t1)] == (1, t1)
    assert last[w("jo", t1, t1)] == (1, t1)
    assert last[w("jo", t5, t4)] == (2, t4)
    assert last[w("emily", t1, t2)] == (2, t2)
    assert last[w("bob", t3, t4)] == (2, t4)
    assert last[w("penny", t3, t3)] == (1, t3)


def test_reduce_session_windows():
    """KStreamAggregationIntegrationTest.shouldReduceSessionWindows: gap 1 s, grace 1 min,
    ``reduce(v1 + ":" + v2, Materialized.as("UserSessionsStore"))``; the late ``jo`` record
    merges into jo's second session as ``resume:late``; the store (IQ) holds bob's two
    sessions."""
    gap = 1000
    records, (t1, t2, t3, t4, t5) = _user_sessions(NOW, gap)
    builder = StreamsBuilder()
    builder.stream("user-sessions", consumed=Consumed.with_(S, S)).group_by_key(grouped=Grouped.with_(S, S)) \
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(gap, 60_000)) \
        .reduce(lambda a, b: f"{a}:{b}", materialized=Materialized.as_("UserSessionsStore")) \
        .to_stream().to("output", produced=Produced.with_(Serdes.session_windowed(S), S))
    out, last, bob = _run_sessions(builder, records, S, store="UserSessionsStore")
    assert len(out) == 13
    assert last[w("bob", t1, t1)] == ("start", t1)
    assert last[w("penny", t1, t1)] == ("start", t1)
    assert last[w("jo", t1, t1)] == ("pause", t1)
    assert last[w("jo", t5, t4)] == ("resume:late", t4)
    assert last[w("emily", t1, t2)] == ("pause:resume", t2)
    assert last[w("bob", t3, t4)] == ("pause:resume", t4)
    assert last[w("penny", t3, t3)] == ("stop", t3)
    assert list(bob) == [(w("bob", t1, t1), "start"), (w("bob", t3, t4), "pause:resume")]


# --- TimeWindowedKStreamIntegrationTest / SlidingWindowedKStreamIntegrationTest ---------------

TW10 = Serdes.time_windowed(S, 10)


def _materialized(with_cache):
    """``getMaterialized(withCache)``: ``Materialized.with(null, String)``, caching on or off."""
    m = Materialized.with_(None, S)
    return m if with_cache else m.with_caching_disabled()


def _windowed_agg_run(windows, emit, with_cache, records):
    builder = StreamsBuilder()
    builder.stream("stream-one", consumed=Consumed.with_(S, S)).group_by_key() \
        .windowed_by(windows).emit_strategy(emit) \
        .aggregate(string_init, string_adder, materialized=_materialized(with_cache)) \
        .to_stream().to("output", produced=Produced.with_(TW10, S))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("stream-one", S, S)
        for k, v, ts in records:
            inp.pipe_input(k, v, ts)
        return kvt(driver.create_output_topic("output", TW10, S).read_records_to_list())


@CACHE
@STRATEGIES
def test_time_windowed_aggregate_with_no_grace(emit, with_cache):
    """TimeWindowedKStreamIntegrationTest.shouldAggregateWindowedWithNoGrace: hopping 10/5, no
    grace. B@6 is late for [0,10). On close, [10,20) of A and B close at stream time 25 together
    with [15,25), but the emit-final store (retention size + grace = 10) has already expired
    them (fetch from 25 - 10 = 15): only [15,25) of B comes out."""
    records = [("A", "1", 0), ("A", "2", 5), ("A", "3", 10), ("B", "4", 6), ("B", "5", 11), ("B", "6", 15),
               ("C", "7", 25)]
    out = _windowed_agg_run(TimeWindows.of_size_with_no_grace(10).advance_by(5), emit, with_cache, records)
    if emit == CLOSE:
        assert out == [(w("A", 0, 10), "0+1+2", 5), (w("A", 5, 15), "0+2+3", 10),
                       (w("B", 5, 15), "0+4+5", 11), (w("B", 15, 25), "0+6", 15)]
    else:
        assert out == [(w("A", 0, 10), "0+1", 0), (w("A", 0, 10), "0+1+2", 5), (w("A", 5, 15), "0+2", 5),
                       (w("A", 5, 15), "0+2+3", 10), (w("A", 10, 20), "0+3", 10),
                       (w("B", 5, 15), "0+4", 6), (w("B", 5, 15), "0+4+5", 11), (w("B", 10, 20), "0+5", 11),
                       (w("B", 10, 20), "0+5+6", 15), (w("B", 15, 25), "0+6", 15),
                       (w("C", 20, 30), "0+7", 25), (w("C", 25, 35), "0+7", 25)]


@CACHE
@STRATEGIES
def test_time_windowed_aggregate_with_grace(emit, with_cache):
    """TimeWindowedKStreamIntegrationTest.shouldAggregateWindowedWithGrace: hopping 10/5, grace 5.
    On close, B@15 closes [0,10) (A, then B); C@25 closes [5,15) and [10,20), but [5,15) is
    already outside the store's retention (15; fetch from 25 - 15 = 10)."""
    records = [("A", "1", 0), ("A", "2", 5), ("A", "3", 10), ("B", "4", 6), ("B", "5", 11), ("B", "6", 15),
               ("C", "7", 25)]
    out = _windowed_agg_run(TimeWindows.of_size_and_grace(10, 5).advance_by(5), emit, with_cache, records)
    if emit == CLOSE:
        assert out == [(w("A", 0, 10), "0+1+2", 5), (w("B", 0, 10), "0+4", 6),
                       (w("A", 10, 20), "0+3", 10), (w("B", 10, 20), "0+5+6", 15)]
    else:
        assert out == [(w("A", 0, 10), "0+1", 0), (w("A", 0, 10), "0+1+2", 5), (w("A", 5, 15), "0+2", 5),
                       (w("A", 5, 15), "0+2+3", 10), (w("A", 10, 20), "0+3", 10),
                       (w("B", 0, 10), "0+4", 6), (w("B", 5, 15), "0+4", 6), (w("B", 5, 15), "0+4+5", 11),
                       (w("B", 10, 20), "0+5", 11), (w("B", 10, 20), "0+5+6", 15), (w("B", 15, 25), "0+6", 15),
                       (w("C", 20, 30), "0+7", 25), (w("C", 25, 35), "0+7", 25)]


@CACHE
@STRATEGIES
def test_sliding_windowed_aggregate_with_no_grace(emit, with_cache):
    """SlidingWindowedKStreamIntegrationTest.shouldAggregateWindowedWithNoGrace: time difference
    10, no grace. A@5 is early (window [0,10]); B@6 and B@11 come after their windows closed
    (stream time 17) and are ignored. On update Kafka's default (RocksDB) store is iterated
    backwards, which fixes the order of the updates. Kafka lists six records for emit-on-close
    (it waits for at least five)."""
    records = [("A", "1", 0),   # create [0,10]
               ("A", "2", 5),   # update [0,10], create [1,11]
               ("A", "3", 10),  # update [0,10], [1,11], create [6,16]
               ("A", "4", 17),  # create [7,17], [11,21]; close [0,10], [1,11], [6,16]
               ("B", "5", 6),   # late, ignored
               ("B", "6", 11),  # late, ignored
               ("B", "7", 18),  # create [8,18]; close A [7,17]
               ("C", "8", 25)]  # create [15,25]; close B [8,18], A [11,21]
    out = _windowed_agg_run(SlidingWindows.of_time_difference_with_no_grace(10), emit, with_cache, records)
    if emit == CLOSE:
        assert out == [(w("A", 0, 10), "0+1+2+3", 10), (w("A", 1, 11), "0+2+3", 10), (w("A", 6, 16), "0+3", 10),
                       (w("A", 7, 17), "0+3+4", 17), (w("B", 8, 18), "0+7", 18), (w("A", 11, 21), "0+4", 17)]
    else:
        assert out == [(w("A", 0, 10), "0+1", 0), (w("A", 1, 11), "0+2", 5), (w("A", 0, 10), "0+1+2", 5),
                       (w("A", 1, 11), "0+2+3", 10), (w("A", 0, 10), "0+1+2+3", 10), (w("A", 6, 16), "0+3", 10),
                       (w("A", 11, 21), "0+4", 17), (w("A", 7, 17), "0+3+4", 17), (w("B", 8, 18), "0+7", 18),
                       (w("C", 15, 25), "0+8", 25)]


@CACHE
@STRATEGIES
def test_sliding_windowed_aggregate_with_grace(emit, with_cache):
    """SlidingWindowedKStreamIntegrationTest.shouldAggregateWindowedWithGrace: time difference
    10, grace 5, out-of-order A@6 and A@11 (updates in the backward iteration order of Kafka's
    default store). A@27: the right window of the previous record (A@16) is [17,27], the same
    window as A@27's own left window; Kafka creates it as the previous record's right window
    and then again as the (empty-before) left window, so ``[17,27] 0+7`` is forwarded twice.
    A@11 at the end is late for every window it falls in."""
    records = [("A", "1", 0), ("A", "2", 5), ("A", "3", 10), ("A", "4", 6), ("A", "5", 11), ("A", "6", 16),
               ("A", "7", 27), ("A", "8", 11)]
    out = _windowed_agg_run(SlidingWindows.of_time_difference_and_grace(10, 5), emit, with_cache, records)
    if emit == CLOSE:
        assert out == [(w("A", 0, 10), "0+1+2+3+4", 10), (w("A", 1, 11), "0+2+3+4+5", 11),
                       (w("A", 6, 16), "0+3+4+5+6", 16), (w("A", 7, 17), "0+3+5+6", 16),
                       (w("A", 11, 21), "0+5+6", 16)]
    else:
        assert out == [(w("A", 0, 10), "0+1", 0), (w("A", 1, 11), "0+2", 5), (w("A", 0, 10), "0+1+2", 5),
                       (w("A", 1, 11), "0+2+3", 10), (w("A", 0, 10), "0+1+2+3", 10), (w("A", 6, 16), "0+3", 10),
                       (w("A", 1, 11), "0+2+3+4", 10), (w("A", 6, 16), "0+3+4", 10), (w("A", 7, 17), "0+3", 10),
                       (w("A", 0, 10), "0+1+2+3+4", 10),
                       (w("A", 7, 17), "0+3+5", 11), (w("A", 6, 16), "0+3+4+5", 11),
                       (w("A", 1, 11), "0+2+3+4+5", 11), (w("A", 11, 21), "0+5", 11),
                       (w("A", 11, 21), "0+5+6", 16), (w("A", 7, 17), "0+3+5+6", 16),
                       (w("A", 6, 16), "0+3+4+5+6", 16), (w("A", 12, 22), "0+6", 16),
                       (w("A", 17, 27), "0+7", 27), (w("A", 17, 27), "0+7", 27)]


def _join_then_window(windows, emit, with_cache):
    """``streamOne.join(streamTwo, v1 + "," + v2, JoinWindows.ofTimeDifferenceWithNoGrace(2))``,
    then ``groupByKey().windowedBy(windows).emitStrategy(emit).aggregate(...)``."""
    builder = StreamsBuilder()
    one = builder.stream("stream-one", consumed=Consumed.with_(S, S))
    two = builder.stream("stream-two", consumed=Consumed.with_(S, S))
    one.join(two, lambda v1, v2: f"{v1},{v2}", JoinWindows.of_time_difference_with_no_grace(2)) \
        .group_by_key().windowed_by(windows).emit_strategy(emit) \
        .aggregate(string_init, string_adder, materialized=_materialized(with_cache)) \
        .to_stream().to("output", produced=Produced.with_(TW10, S))
    return builder


def _pipe_pairs(driver, pairs):
    """Both topics' records in Kafka's processing order: by timestamp, stream-one first on ties."""
    one = driver.create_input_topic("stream-one", S, S)
    two = driver.create_input_topic("stream-two", S, S)
    for key, left, right, ts in pairs:
        one.pipe_input(key, left, ts)
        two.pipe_input(key, right, ts)
    return kvt(driver.create_output_topic("output", TW10, S).read_records_to_list())


@CACHE
@STRATEGIES
def test_time_windowed_restore_after_join_restart(emit, with_cache):
    """TimeWindowedKStreamIntegrationTest.shouldRestoreAfterJoinRestart: a stream-stream join
    (2 ms, no grace) feeding hopping 10/5 windows without grace. Kafka then closes the
    application, wipes its state and restarts; here the same driver goes on (see the module
    docstring). C@35 closes [20,30) and [25,35); on close only [25,35) is still in the store."""
    builder = _join_then_window(TimeWindows.of_size_with_no_grace(10).advance_by(5), emit, with_cache)
    with driver_for(builder) as driver:
        out = _pipe_pairs(driver, [("A", "L1", "R1", 0), ("A", "L1", "R1", 5), ("B", "L2", "R2", 11),
                                   ("B", "L2", "R2", 15), ("C", "L3", "R3", 25)])
        if emit == CLOSE:
            assert out == [(w("A", 0, 10), "0+L1,R1+L1,R1", 5), (w("A", 5, 15), "0+L1,R1", 5),
                           (w("B", 5, 15), "0+L2,R2", 11), (w("B", 15, 25), "0+L2,R2", 15)]
        else:
            assert out == [(w("A", 0, 10), "0+L1,R1", 0), (w("A", 0, 10), "0+L1,R1+L1,R1", 5),
                           (w("A", 5, 15), "0+L1,R1", 5), (w("B", 5, 15), "0+L2,R2", 11),
                           (w("B", 10, 20), "0+L2,R2", 11), (w("B", 10, 20), "0+L2,R2+L2,R2", 15),
                           (w("B", 15, 25), "0+L2,R2", 15), (w("C", 20, 30), "0+L3,R3", 25),
                           (w("C", 25, 35), "0+L3,R3", 25)]
        out = _pipe_pairs(driver, [("C", "L3", "R3", 35)])
        if emit == CLOSE:
            assert out == [(w("C", 25, 35), "0+L3,R3", 25)]
        else:
            assert out == [(w("C", 30, 40), "0+L3,R3", 35), (w("C", 35, 45), "0+L3,R3", 35)]


@CACHE
@STRATEGIES
def test_sliding_windowed_restore_after_join_restart(emit, with_cache):
    """SlidingWindowedKStreamIntegrationTest.shouldRestoreAfterJoinRestart: the join feeding
    sliding windows (time difference 10, no grace); the second phase continues on the same
    driver (see the module docstring)."""
    builder = _join_then_window(SlidingWindows.of_time_difference_with_no_grace(10), emit, with_cache)
    with driver_for(builder) as driver:
        out = _pipe_pairs(driver, [("A", "L1", "R1", 0), ("A", "L2", "R2", 5), ("B", "L3", "R3", 11),
                                   ("B", "L4", "R4", 15), ("C", "L5", "R5", 25)])
        if emit == CLOSE:
            assert out == [(w("A", 0, 10), "0+L1,R1+L2,R2", 5), (w("A", 1, 11), "0+L2,R2", 5),
                           (w("B", 1, 11), "0+L3,R3", 11), (w("B", 5, 15), "0+L3,R3+L4,R4", 15),
                           (w("B", 12, 22), "0+L4,R4", 15)]
        else:
            assert out == [(w("A", 0, 10), "0+L1,R1", 0), (w("A", 1, 11), "0+L2,R2", 5),
                           (w("A", 0, 10), "0+L1,R1+L2,R2", 5), (w("B", 1, 11), "0+L3,R3", 11),
                           (w("B", 12, 22), "0+L4,R4", 15), (w("B", 5, 15), "0+L3,R3+L4,R4", 15),
                           (w("C", 15, 25), "0+L5,R5", 25)]
        out = _pipe_pairs(driver, [("C", "L6", "R6", 35)])
        if emit == CLOSE:
            assert out == [(w("C", 15, 25), "0+L5,R5", 25)]
        else:
            assert out == [(w("C", 26, 36), "0+L6,R6", 35), (w("C", 25, 35), "0+L5,R5+L6,R6", 35)]


# --- KStreamSessionWindowAggregateProcessorTest ----------------------------------------------

@STRATEGIES
def test_session_aggregated_values_from_value_getter(emit):
    """KStreamSessionWindowAggregateProcessorTest.shouldGetAggregatedValuesFromValueGetter: count
    over sessions (gap 5 min, no grace); the table's view returns 1 for [0,0] and 2 for
    [gap+1, gap+1]. Kafka's value getter reads the session store (retention 3 x gap in that
    test); here the same store is read through the driver."""
    gap = 5 * 60 * 1000
    builder = StreamsBuilder()
    builder.stream("input", consumed=Consumed.with_(S, S)).group_by_key() \
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(gap)).emit_strategy(emit) \
        .count(materialized=Materialized.as_("session-store").with_value_serde(L).with_retention(3 * gap))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        for k, v, ts in [("a", "1", 0), ("a", "1", gap + 1), ("a", "2", gap + 1)]:
            inp.pipe_input(k, v, ts)
        sessions = dict(driver.get_session_store("session-store").fetch_sessions("a"))
    assert sessions[w("a", 0, 0)] == 1
    assert sessions[w("a", gap + 1, gap + 1)] == 2
