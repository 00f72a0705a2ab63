"""KStream–KTable left join (grace 0), ported from Kafka Streams' KStreamKTableLeftJoinTest."""
from __future__ import annotations

import pytest

from streamlib import Consumed, Produced, StreamsBuilder

from join_helpers import push, tostring_joiner
from streams_helpers import I, S, driver_for, kvt

CONSUMED = Consumed.with_(I, S)


@pytest.fixture
def topics():
    builder = StreamsBuilder()
    stream = builder.stream("streamTopic", consumed=CONSUMED)
    table = builder.table("tableTopic", consumed=CONSUMED)
    stream.left_join(table, tostring_joiner).to("out", produced=Produced.with_(I, S))
    with driver_for(builder) as driver:
        yield (driver.create_input_topic("streamTopic", I, S), driver.create_input_topic("tableTopic", I, S),
               driver.create_output_topic("out", I, S), driver)


def test_should_require_copartitioned_streams(topics):
    """KStreamKTableLeftJoinTest.shouldRequireCopartitionedStreams."""
    *_, driver = topics
    [sub] = [s for s in driver.topology.subtopologies if s.stateful]
    assert sorted(sub.source_topics) == ["streamTopic", "tableTopic"]


def test_should_join_with_empty_table_on_stream_updates(topics):
    """KStreamKTableLeftJoinTest.shouldJoinWithEmptyTableOnStreamUpdates."""
    stream, _, out, _ = topics
    push(stream, 2, "X")
    assert kvt(out.read_records_to_list()) == [(0, "X0+null", 0), (1, "X1+null", 1)]


def test_should_not_join_on_table_updates(topics):
    """KStreamKTableLeftJoinTest.shouldNotJoinOnTableUpdates."""
    stream, table, out, _ = topics
    push(stream, 2, "X")
    assert kvt(out.read_records_to_list()) == [(0, "X0+null", 0), (1, "X1+null", 1)]
    push(table, 2, "Y", [900, 17])
    assert out.is_empty()
    push(stream, 4, "X")
    assert kvt(out.read_records_to_list()) == [(0, "X0+Y0", 0), (1, "X1+Y1", 1),
                                               (2, "X2+null", 2), (3, "X3+null", 3)]
    push(table, 4, "YY", [5, 1000, 3, 77])
    assert out.is_empty()
    push(stream, 4, "X")
    assert kvt(out.read_records_to_list()) == [(0, "X0+YY0", 0), (1, "X1+YY1", 1),
                                               (2, "X2+YY2", 2), (3, "X3+YY3", 3)]
    push(table, 4, "YYY", [1, 2, 3, 4])
    assert out.is_empty()


def test_should_join_regardless_if_match_found_on_stream_updates(topics):
    """KStreamKTableLeftJoinTest.shouldJoinRegardlessIfMatchFoundOnStreamUpdates."""
    stream, table, out, _ = topics
    push(table, 2, "Y", [40, 41])
    assert out.is_empty()
    push(stream, 4, "X")
    assert kvt(out.read_records_to_list()) == [(0, "X0+Y0", 0), (1, "X1+Y1", 1),
                                               (2, "X2+null", 2), (3, "X3+null", 3)]


def test_should_clear_table_entry_on_null_value_updates(topics):
    """KStreamKTableLeftJoinTest.shouldClearTableEntryOnNullValueUpdates."""
    stream, table, out, _ = topics
    push(table, 4, "Y", [9, 8, 7, 6])
    push(stream, 4, "X")
    assert kvt(out.read_records_to_list()) == [(0, "X0+Y0", 0), (1, "X1+Y1", 1),
                                               (2, "X2+Y2", 2), (3, "X3+Y3", 3)]
    table.pipe_input(0, None)
    table.pipe_input(1, None)
    assert out.is_empty()
    push(stream, 4, "XX")
    assert kvt(out.read_records_to_list()) == [(0, "XX0+null", 0), (1, "XX1+null", 1),
                                               (2, "XX2+Y2", 2), (3, "XX3+Y3", 3)]


def test_null_key_is_joined_with_no_row(topics):
    """KIP-962 (Kafka's KStreamKTableJoinProcessor.maybeDropRecord): a left join keeps a record
    with a None key and a value, joining it with no row; nothing is dropped."""
    stream, table, out, driver = topics
    table.pipe_input(1, "Y1", 0)
    stream.pipe_input(None, "A", 3)
    assert kvt(out.read_records_to_list()) == [(None, "A+null", 3)]
    assert driver.metrics()["dropped_records"] == 0


def test_null_value_is_dropped_and_counted(topics):
    """KStreamKTableJoinProcessor.maybeDropRecord: a None stream value is dropped and counted in
    a left join too."""
    stream, table, out, driver = topics
    table.pipe_input(1, "Y1", 0)
    stream.pipe_input(1, None, 3)
    assert out.is_empty()
    assert driver.metrics()["dropped_records"] == 1
