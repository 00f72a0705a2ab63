"""``Suppressed.until_time_limit`` and ``Suppressed.BufferConfig`` (bounded buffers that
emit early or shut down), and the headers a suppress forwards. Scenarios ported from
Kafka Streams' ``SuppressScenarioTest`` and ``KTableSuppressProcessorTest`` (caching
disabled, as there)."""
from __future__ import annotations

import pytest

from streamlib import (Consumed, Grouped, Materialized, Produced, StreamsBuilder, Suppressed, TimeWindows)
from streamlib.processors.base import ProcessingError
from streamlib.topology import TopologyError

from streams_helpers import L, S, driver_for, kvt
from windowed_helpers import SuppressOutputs

BufferConfig = Suppressed.BufferConfig
NEVER = 1 << 62


def _value_counts(suppressed: Suppressed):
    """SuppressScenarioTest's topology: a table re-grouped by value and counted, to
    ``output-raw`` as is and to ``output-suppressed`` through ``suppressed``."""
    builder = StreamsBuilder()
    counts = builder.table("input", consumed=Consumed.with_(S, S),
                           materialized=Materialized.with_(S, S).with_caching_disabled()) \
        .group_by(lambda k, v: (v, k), Grouped.with_(S, S)).count()
    counts.suppress(suppressed).to_stream().to("output-suppressed", produced=Produced.with_(S, L))
    counts.to_stream().to("output-raw", produced=Produced.with_(S, L))
    return builder


FIRST_RAW = [("v1", 1, 0), ("v1", 0, 1), ("v2", 1, 1), ("v1", 1, 2)]


def test_zero_time_limit_emits_at_once():
    """SuppressScenarioTest.shouldImmediatelyEmitEventsWithZeroEmitAfter."""
    with driver_for(_value_counts(Suppressed.until_time_limit(0, BufferConfig.unbounded()))) as driver:
        s = SuppressOutputs(driver)
        for k, v, ts in (("k1", "v1", 0), ("k1", "v2", 1), ("k2", "v1", 2)):
            s.inp.pipe_input(k, v, ts)
        assert s.drain() == (FIRST_RAW, FIRST_RAW)
        s.inp.pipe_input("x", "x", 3)
        assert s.drain() == ([("x", 1, 3)], [("x", 1, 3)])
        s.inp.pipe_input("x", "y", 4)
        assert s.drain() == ([("x", 0, 4), ("y", 1, 4)], [("x", 0, 4), ("y", 1, 4)])


def test_time_limit_suppresses_intermediate_events():
    """SuppressScenarioTest.shouldSuppressIntermediateEventsWithTimeLimit: a key waits
    from its first buffered update (tick, first at 3, still waits at 4)."""
    with driver_for(_value_counts(Suppressed.until_time_limit(2, BufferConfig.unbounded()))) as driver:
        s = SuppressOutputs(driver)
        for k, v, ts in (("k1", "v1", 0), ("k1", "v2", 1), ("k2", "v1", 2)):
            s.inp.pipe_input(k, v, ts)
        assert s.drain() == (FIRST_RAW, [("v1", 1, 2)])
        s.inp.pipe_input("tick", "tick", 3)
        assert s.drain() == ([("tick", 1, 3)], [("v2", 1, 1)])
        s.inp.pipe_input("tick", "tock", 4)
        assert s.drain() == ([("tick", 0, 4), ("tock", 1, 4)], [])


def test_record_limit_emits_early():
    """SuppressScenarioTest.shouldSuppressIntermediateEventsWithRecordLimit."""
    suppressed = Suppressed.until_time_limit(NEVER, BufferConfig.max_records(1).emit_early_when_full())
    with driver_for(_value_counts(suppressed)) as driver:
        s = SuppressOutputs(driver)
        for k, v, ts in (("k1", "v1", 0), ("k1", "v2", 1), ("k2", "v1", 2)):
            s.inp.pipe_input(k, v, ts)
        assert s.drain() == (FIRST_RAW, [("v1", 0, 1), ("v2", 1, 1)])
        s.inp.pipe_input("x", "x", 3)
        assert s.drain() == ([("x", 1, 3)], [("v1", 1, 2)])


def test_record_limit_shuts_down_when_full():
    """KTableSuppressProcessorTest.suppressShouldShutDownWhenOverRecordCapacity: the
    second buffered key fails the task, naming the buffer's fill."""
    suppressed = Suppressed.until_time_limit(NEVER, BufferConfig.max_records(1).shut_down_when_full())
    with driver_for(_value_counts(suppressed)) as driver:
        s = SuppressOutputs(driver)
        s.inp.pipe_input("k1", "v1", 0)
        s.inp.pipe_input("k1", "v1", 1)          # the same key again: still one record
        with pytest.raises(ProcessingError, match=r"exceeded its max capacity.*\[2/1\] records"):
            s.inp.pipe_input("k2", "v2", 2)


def test_byte_limit():
    """``max_bytes``: one entry here is 25-26 bytes (key, change, two timestamps), so 40
    bytes hold one key; a second emits the oldest early, or shuts down."""
    early = Suppressed.until_time_limit(NEVER, BufferConfig.max_bytes(40))
    with driver_for(_value_counts(early)) as driver:
        s = SuppressOutputs(driver)
        s.inp.pipe_input("k1", "v1", 0)
        s.inp.pipe_input("k2", "v2", 1)
        assert s.drain()[1] == [("v1", 1, 0)]
    strict = Suppressed.until_time_limit(NEVER, BufferConfig.max_bytes(40).shut_down_when_full())
    with driver_for(_value_counts(strict)) as driver:
        s = SuppressOutputs(driver)
        s.inp.pipe_input("k1", "v1", 0)
        with pytest.raises(ProcessingError, match=r"bytes"):
            s.inp.pipe_input("k2", "v2", 1)


def test_time_limit_forwards_tombstones():
    """KTableSuppressProcessorTest.suppressShouldNotDropTombstonesForKTable: under a
    time limit a delete waits and is forwarded like any update."""
    builder = StreamsBuilder()
    builder.table("input", consumed=Consumed.with_(S, S),
                  materialized=Materialized.with_(S, S).with_caching_disabled()) \
        .suppress(Suppressed.until_time_limit(2)).to_stream() \
        .to("out", produced=Produced.with_(S, S))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        out = driver.create_output_topic("out", S, S)
        inp.pipe_input("a", "x", 0)
        inp.pipe_input("a", None, 1)
        assert kvt(out.read_records_to_list()) == []
        inp.pipe_input("b", "y", 5)
        assert kvt(out.read_records_to_list()) == [("a", None, 1)]


def test_suppress_keeps_the_buffered_records_headers():
    """Issue 39 against Kafka Streams 4.3.1: a final result keeps the headers of the
    update it is (its record's context, as Kafka's buffer keeps it); so does a time
    limit's."""
    builder = StreamsBuilder()
    builder.stream("input", consumed=Consumed.with_(S, S)).group_by_key() \
        .windowed_by(TimeWindows.of(10)).count() \
        .suppress(Suppressed.until_window_closes()).to_stream() \
        .map(lambda k, v: (k.key, v)).to("out", produced=Produced.with_(S, L))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        inp.pipe_input("a", "1", 1, headers={"h": b"first"})
        inp.pipe_input("a", "2", 2, headers={"h": b"second"})
        inp.pipe_input("b", "3", 20)
        records = driver.create_output_topic("out", S, L).read_records_to_list()
    assert [(r.key, r.value, r.timestamp, r.headers) for r in records] == [("a", 2, 2, {"h": b"second"})]


def test_until_window_closes_takes_only_a_buffer_that_never_emits_early():
    """Kafka's ``untilWindowCloses(StrictBufferConfig)``."""
    assert Suppressed.until_window_closes(BufferConfig.max_records(5).shut_down_when_full()).kind
    with pytest.raises(TopologyError, match="shut_down_when_full"):
        Suppressed.until_window_closes(BufferConfig.max_records(5))
    with pytest.raises(TopologyError, match="non-negative"):
        BufferConfig.max_records(-1)
