"""count / reduce / aggregate over sliding windows, ported from Kafka Streams'
``streams/src/test/java/org/apache/kafka/streams/kstream/internals/SlidingWindowedKStreamImplTest.java``.

The windowed stream is ``SlidingWindows.of(100, grace=1000)``. Kafka reads
``lastValueAndTimestampPerKey`` of a mock processor; we read the last (value, timestamp)
per windowed key from the output topic. Its ``getTimestampedWindowStore`` checks are
covered by those timestamps (the driver has no timestamped window-store view); the
null-argument checks are Java-only.
"""
import pytest

from streamlib import Consumed, Materialized, Produced, Serdes, SlidingWindows, StreamsBuilder, Window, Windowed

from streams_helpers import L, S, driver_for, kvt
from windowed_helpers import string_adder, string_init

SW = Serdes.time_windowed(S, 100)
DATA = [("1", "1", 100), ("1", "2", 150), ("1", "3", 500), ("2", "10", 200), ("2", "20", 150)]
STORE_FETCH = [("1", 0), ("1", 50), ("1", 101), ("1", 400), ("2", 50), ("2", 100), ("2", 151)]


def _w(key, start):
    return Windowed(key, Window(start, start + 100))


def _windowed_stream(builder):
    return builder.stream("input", consumed=Consumed.with_(S, S)).group_by_key() \
        .windowed_by(SlidingWindows.of(100, grace=1000))


def _last_per_window(builder, table, value_serde, records=DATA):
    table.to_stream().to("out", produced=Produced.with_(SW, value_serde))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        for k, v, ts in records:
            inp.pipe_input(k, v, ts)
        out = kvt(driver.create_output_topic("out", SW, value_serde).read_records_to_list())
    return {w: (value, ts) for w, value, ts in out}


def _store_contents(builder, name, records=DATA, keys=("1", "2"), time_to=1000):
    """Kafka's ``windowStore.fetch("1", "2", 0, time_to)``: by key, then window start."""
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        for k, v, ts in records:
            inp.pipe_input(k, v, ts)
        store = driver.get_window_store(name)
        return [((key, start), value) for key in keys for start, value in store.fetch(key, 0, time_to)]


def test_count_sliding_windows():
    """SlidingWindowedKStreamImplTest.shouldCountSlidingWindows"""
    builder = StreamsBuilder()
    last = _last_per_window(builder, _windowed_stream(builder).count(), L)
    assert last[_w("1", 0)] == (1, 100)
    assert last[_w("1", 101)] == (1, 150)
    assert last[_w("1", 50)] == (2, 150)
    assert last[_w("1", 400)] == (1, 500)
    assert last[_w("2", 100)] == (2, 200)
    assert last[_w("2", 50)] == (1, 150)
    assert last[_w("2", 151)] == (1, 200)


def test_reduce_sliding_windows():
    """SlidingWindowedKStreamImplTest.shouldReduceSlidingWindows"""
    builder = StreamsBuilder()
    last = _last_per_window(builder, _windowed_stream(builder).reduce(lambda a, b: f"{a}+{b}"), S)
    assert last == {_w("1", 0): ("1", 100), _w("1", 101): ("2", 150), _w("1", 50): ("1+2", 150),
                    _w("1", 400): ("3", 500), _w("2", 100): ("10+20", 200), _w("2", 50): ("20", 150),
                    _w("2", 151): ("10", 200)}


def test_aggregate_sliding_windows():
    """SlidingWindowedKStreamImplTest.shouldAggregateSlidingWindows"""
    builder = StreamsBuilder()
    table = _windowed_stream(builder).aggregate(string_init, string_adder, materialized=Materialized.with_(S, S))
    last = _last_per_window(builder, table, S)
    assert last == {_w("1", 0): ("0+1", 100), _w("1", 101): ("0+2", 150), _w("1", 50): ("0+1+2", 150),
                    _w("1", 400): ("0+3", 500), _w("2", 100): ("0+10+20", 200), _w("2", 50): ("0+20", 150),
                    _w("2", 151): ("0+10", 200)}


def test_materialize_count():
    """SlidingWindowedKStreamImplTest.shouldMaterializeCount"""
    builder = StreamsBuilder()
    _windowed_stream(builder).count(
        materialized=Materialized.as_("count-store").with_key_serde(S).with_value_serde(L))
    assert _store_contents(builder, "count-store") == list(zip(STORE_FETCH, [1, 2, 1, 1, 1, 2, 1]))


def test_materialize_reduced():
    """SlidingWindowedKStreamImplTest.shouldMaterializeReduced"""
    builder = StreamsBuilder()
    _windowed_stream(builder).reduce(lambda a, b: f"{a}+{b}",
                                     materialized=Materialized.as_("reduced").with_key_serde(S).with_value_serde(S))
    assert _store_contents(builder, "reduced") == list(zip(STORE_FETCH, ["1", "1+2", "2", "3", "20", "10+20", "10"]))


def test_materialize_aggregated():
    """SlidingWindowedKStreamImplTest.shouldMaterializeAggregated"""
    builder = StreamsBuilder()
    _windowed_stream(builder).aggregate(
        string_init, string_adder, materialized=Materialized.as_("aggregated").with_key_serde(S).with_value_serde(S))
    assert _store_contents(builder, "aggregated") == list(
        zip(STORE_FETCH, ["0+1", "0+1+2", "0+2", "0+3", "0+20", "0+10+20", "0+10"]))


def test_retention_too_small_is_rejected():
    """SlidingWindowedKStreamImplTest.shouldThrowIllegalArgumentWhenRetentionIsTooSmall: a store
    retention below 2 * time difference + grace cannot hold the windows new ones are built from."""
    builder = StreamsBuilder()
    with pytest.raises(ValueError, match="must be no smaller than 2 \\* time difference plus the grace period"):
        _windowed_stream(builder).aggregate(
            string_init, string_adder,
            materialized=Materialized.as_("aggregated").with_key_serde(S).with_value_serde(S).with_retention(1))


def test_drop_windows_outside_of_retention():
    """SlidingWindowedKStreamImplTest.shouldDropWindowsOutsideOfRetention: retention 1200 (Kafka
    uses an in-memory store supplier of that retention; here Materialized.with_retention). After
    1@2000 only windows starting after 1900 - 1200 remain."""
    builder = StreamsBuilder()
    _windowed_stream(builder).aggregate(
        string_init, string_adder,
        materialized=Materialized.as_("aggregated").with_key_serde(S).with_value_serde(S).with_retention(1200)
        .with_caching_disabled())
    records = [("1", "2", 100), ("1", "3", 500), ("1", "4", 799), ("1", "4", 1000), ("1", "5", 2000)]
    assert _store_contents(builder, "aggregated", records, keys=("1",), time_to=10000) == [
        (("1", 900), "0+4"), (("1", 1900), "0+5")]
