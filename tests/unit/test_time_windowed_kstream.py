"""count / reduce / aggregate over tumbling windows, ported from Kafka Streams'
``streams/src/test/java/org/apache/kafka/streams/kstream/internals/TimeWindowedKStreamImplTest.java``.

Kafka runs each test with emit-on-update / emit-on-close and caching on / off; our
TopologyTestDriver emits every update, like Kafka's driver, so the uncached expectations
are ported (for the emitted records cached and uncached agree). The null-argument checks
are Java-only and left out. (Tests pending the windowed DSL.)
"""
import pytest

from streamlib import (Consumed, EmitStrategy, Materialized, Produced, Serdes, StreamsBuilder, TimeWindows, Window,
                       Windowed)

from streams_helpers import L, S, driver_for, kvt
from windowed_helpers import string_adder, string_init

UPDATE, CLOSE = EmitStrategy.on_window_update(), EmitStrategy.on_window_close()
STRATEGIES = pytest.mark.parametrize("emit", [UPDATE, CLOSE], ids=["on_update", "on_close"])
K1W0 = Windowed("1", Window(0, 500))
K1W1 = Windowed("1", Window(500, 1000))
K2W1 = Windowed("2", Window(500, 1000))
K2W2 = Windowed("2", Window(1000, 1500))
TW = Serdes.time_windowed(S, 500)
DATA = [("1", "1", 10), ("1", "2", 15), ("1", "3", 500), ("2", "10", 550), ("2", "20", 500), ("2", "30", 1000)]


def _windowed_stream(builder):
    return builder.stream("input", consumed=Consumed.with_(S, S)).group_by_key() \
        .windowed_by(TimeWindows.of(500))


def _process(builder, table=None, value_serde=S, check=None):
    if table is not None:
        table.to_stream().to("out", produced=Produced.with_(TW, value_serde))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        for k, v, ts in DATA:
            inp.pipe_input(k, v, ts)
        if check is not None:
            check(driver)
        if table is not None:
            return kvt(driver.create_output_topic("out", TW, value_serde).read_records_to_list())


@STRATEGIES
def test_count_windowed(emit):
    """TimeWindowedKStreamImplTest.shouldCountWindowed"""
    builder = StreamsBuilder()
    out = _process(builder, _windowed_stream(builder).emit_strategy(emit).count(), L)
    if emit == CLOSE:
        assert out == [(K1W0, 2, 15), (K1W1, 1, 500), (K2W1, 2, 550)]
    else:
        assert out == [(K1W0, 1, 10), (K1W0, 2, 15), (K1W1, 1, 500), (K2W1, 1, 550), (K2W1, 2, 550),
                       (K2W2, 1, 1000)]


@STRATEGIES
def test_reduce_windowed(emit):
    """TimeWindowedKStreamImplTest.shouldReduceWindowed"""
    builder = StreamsBuilder()
    out = _process(builder, _windowed_stream(builder).emit_strategy(emit).reduce(lambda a, b: f"{a}+{b}"))
    if emit == CLOSE:
        assert out == [(K1W0, "1+2", 15), (K1W1, "3", 500), (K2W1, "10+20", 550)]
    else:
        assert out == [(K1W0, "1", 10), (K1W0, "1+2", 15), (K1W1, "3", 500), (K2W1, "10", 550),
                       (K2W1, "10+20", 550), (K2W2, "30", 1000)]


@STRATEGIES
def test_aggregate_windowed(emit):
    """TimeWindowedKStreamImplTest.shouldAggregateWindowed"""
    builder = StreamsBuilder()
    table = _windowed_stream(builder).emit_strategy(emit).aggregate(
        string_init, string_adder, materialized=Materialized.with_(S, S))
    out = _process(builder, table)
    if emit == CLOSE:
        assert out == [(K1W0, "0+1+2", 15), (K1W1, "0+3", 500), (K2W1, "0+10+20", 550)]
    else:
        assert out == [(K1W0, "0+1", 10), (K1W0, "0+1+2", 15), (K1W1, "0+3", 500), (K2W1, "0+10", 550),
                       (K2W1, "0+10+20", 550), (K2W2, "0+30", 1000)]


def _fetch_both(driver, name):
    ws = driver.get_window_store(name)
    return list(ws.fetch("1", 0, 1000)), list(ws.fetch("2", 0, 1000))


@STRATEGIES
def test_materialize_count(emit):
    """TimeWindowedKStreamImplTest.shouldMaterializeCount (without cache): the store hides windows
    its retention (size + grace = 500) expired. On update (Kafka's key-first store) a window
    with start < observed - retention + 1 = 501 is gone; on close (Kafka's time-first store)
    start < observed - retention = 500."""
    builder = StreamsBuilder()
    _windowed_stream(builder).emit_strategy(emit).count(
        materialized=Materialized.as_("count-store").with_key_serde(S).with_value_serde(L))

    def check(driver):
        ones, twos = _fetch_both(driver, "count-store")
        if emit == CLOSE:
            assert ones == [(500, 1)] and twos == [(500, 2), (1000, 1)]
        else:
            assert ones == [] and twos == [(1000, 1)]
    _process(builder, check=check)


def test_materialize_reduced():
    """TimeWindowedKStreamImplTest.shouldMaterializeReduced (without cache): only [1000,1500) of
    key 2 is still inside retention."""
    builder = StreamsBuilder()
    _windowed_stream(builder).reduce(lambda a, b: f"{a}+{b}",
                                     materialized=Materialized.as_("reduced").with_key_serde(S).with_value_serde(S))
    _process(builder, check=lambda d: _assert_only_last(d, "reduced", "30"))


def test_materialize_aggregated():
    """TimeWindowedKStreamImplTest.shouldMaterializeAggregated (without cache)."""
    builder = StreamsBuilder()
    _windowed_stream(builder).aggregate(string_init, string_adder,
                                        materialized=Materialized.as_("aggregated").with_value_serde(S))
    _process(builder, check=lambda d: _assert_only_last(d, "aggregated", "0+30"))


def _assert_only_last(driver, name, value):
    assert _fetch_both(driver, name) == ([], [(1000, value)])
