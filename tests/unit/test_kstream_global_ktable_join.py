"""Stream–global-table joins, ported from Kafka Streams' KStreamGlobalKTableJoinTest and
KStreamGlobalKTableLeftJoinTest (TopologyTestDriver).

The stream's values are ``"X0,FKey0"``: the key selector picks the table key after the
comma (None when there is none). Kafka's test topic auto-advances the stream's
timestamps by 1 ms per record; :class:`Pusher` does the same."""
from __future__ import annotations

import pytest

from streamlib import Consumed, Materialized, Produced, StreamsBuilder

from join_helpers import tostring_joiner
from streams_helpers import I, S, driver_for, kvt

KEYS = (0, 1, 2, 3)


def key_mapper(key, value):
    tokens = value.split(",")
    return tokens[1] if len(tokens) > 1 else None


class Pusher:
    def __init__(self, left: bool, materialized=None):
        builder = StreamsBuilder()
        stream = builder.stream("streamTopic", consumed=Consumed.with_(I, S))
        table = builder.global_table("globalTopic", consumed=Consumed.with_(S, S),
                                     materialized=materialized)
        joined = (stream.left_join if left else stream.join)(table, key_mapper, tostring_joiner)
        joined.to("out", Produced.with_(I, S))
        self.topology = builder.build()
        self._driver_cm = driver_for(self.topology)
        self.driver = self._driver_cm.__enter__()
        self.stream = self.driver.create_input_topic("streamTopic", I, S)
        self.table = self.driver.create_input_topic("globalTopic", S, S)
        self.out = self.driver.create_output_topic("out", I, S)
        self.time = 0

    def push_stream(self, count: int, prefix: str, foreign_key: bool = True, null_key: bool = False):
        for i in range(count):
            value = f"{prefix}{KEYS[i]}" + (f",FKey{KEYS[i]}" if foreign_key else "")
            self.stream.pipe_input(None if null_key and i == 0 else KEYS[i], value, self.time)
            self.time += 1

    def push_table(self, count: int, prefix: str):
        for i in range(count):
            self.table.pipe_input(f"FKey{KEYS[i]}", f"{prefix}{KEYS[i]}", 0)

    def push_table_deletes(self, count: int):
        for i in range(count):
            self.table.pipe_input(f"FKey{KEYS[i]}", None, 0)

    def take(self):
        return kvt(self.out.read_records_to_list())

    def close(self):
        self._driver_cm.__exit__(None, None, None)


@pytest.fixture
def inner():
    p = Pusher(left=False)
    yield p
    p.close()


@pytest.fixture
def left():
    p = Pusher(left=True)
    yield p
    p.close()


def test_should_not_require_copartitioning(inner):
    """KStreamGlobalKTableJoinTest.shouldNotRequireCopartitioning: the global table is in
    no sub-topology and the stream is not repartitioned."""
    topology = inner.topology
    assert len(topology.subtopologies) == 1
    assert topology.subtopologies[0].source_topics == ["streamTopic"]
    assert topology.source_topics() == ["streamTopic"]
    text = topology.describe()
    assert "for global store (will not generate tasks)" in text
    assert "topics: [globalTopic]" in text and "repartition" not in text


def test_should_not_join_with_empty_global_table(inner):
    """KStreamGlobalKTableJoinTest.shouldNotJoinWithEmptyGlobalTableOnStreamUpdates."""
    inner.push_stream(2, "X")
    assert inner.take() == []


def test_should_not_join_on_global_table_updates(inner):
    """KStreamGlobalKTableJoinTest.shouldNotJoinOnGlobalTableUpdates."""
    inner.push_stream(2, "X")
    assert inner.take() == []
    inner.push_table(2, "Y")
    assert inner.take() == []
    inner.push_stream(4, "X")
    assert inner.take() == [(0, "X0,FKey0+Y0", 2), (1, "X1,FKey1+Y1", 3)]
    inner.push_table(4, "YY")
    assert inner.take() == []
    inner.push_stream(4, "X")
    assert inner.take() == [(0, "X0,FKey0+YY0", 6), (1, "X1,FKey1+YY1", 7),
                            (2, "X2,FKey2+YY2", 8), (3, "X3,FKey3+YY3", 9)]
    inner.push_table(4, "YYY")
    assert inner.take() == []


def test_should_join_only_if_match_found(inner):
    """KStreamGlobalKTableJoinTest.shouldJoinOnlyIfMatchFoundOnStreamUpdates."""
    inner.push_table(2, "Y")
    inner.push_stream(4, "X")
    assert inner.take() == [(0, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1)]


def test_should_clear_global_table_entry_on_null_value_updates(inner):
    """KStreamGlobalKTableJoinTest.shouldClearGlobalTableEntryOnNullValueUpdates."""
    inner.push_table(4, "Y")
    inner.push_stream(4, "X")
    assert inner.take() == [(k, f"X{k},FKey{k}+Y{k}", k) for k in KEYS]
    inner.push_table_deletes(2)
    assert inner.take() == []
    inner.push_stream(4, "XX")
    assert inner.take() == [(2, "XX2,FKey2+Y2", 6), (3, "XX3,FKey3+Y3", 7)]


def test_should_not_join_on_null_key_mapper_values(inner):
    """KStreamGlobalKTableJoinTest.shouldNotJoinOnNullKeyMapperValues."""
    inner.push_table(4, "Y")
    inner.push_stream(4, "XXX", foreign_key=False)
    assert inner.take() == []
    assert inner.driver.metrics()["dropped_records"] == 4


def test_should_join_on_null_key_with_non_null_key_mapper_values(inner):
    """KStreamGlobalKTableJoinTest.shouldJoinOnNullKeyWithNonNullKeyMapperValues."""
    inner.push_table(2, "Y")
    inner.push_stream(4, "X", null_key=True)
    assert inner.take() == [(None, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1)]


def test_left_join_with_empty_global_table(left):
    """KStreamGlobalKTableLeftJoinTest.shouldJoinWithEmptyGlobalTableOnStreamUpdates."""
    left.push_stream(2, "X")
    assert left.take() == [(0, "X0,FKey0+null", 0), (1, "X1,FKey1+null", 1)]


def test_left_join_on_global_table_updates(left):
    """KStreamGlobalKTableLeftJoinTest.shouldNotJoinOnGlobalTableUpdates."""
    left.push_stream(2, "X")
    assert left.take() == [(0, "X0,FKey0+null", 0), (1, "X1,FKey1+null", 1)]
    left.push_table(2, "Y")
    assert left.take() == []
    left.push_stream(4, "X")
    assert left.take() == [(0, "X0,FKey0+Y0", 2), (1, "X1,FKey1+Y1", 3),
                           (2, "X2,FKey2+null", 4), (3, "X3,FKey3+null", 5)]
    left.push_table_deletes(2)
    left.push_stream(4, "XX")
    assert left.take() == [(k, f"XX{k},FKey{k}+null", 6 + k) for k in KEYS]


def test_left_join_on_null_key_mapper_values_joins_with_null(left):
    """KStreamGlobalKTableLeftJoinTest.shouldNotJoinOnNullKeyMapperValues as KAFKA-19208
    (Kafka 4.1) changed it: a left join no longer drops a record whose selected key is
    None but joins it with no table value (KIP-962), whether its own key is None or not."""
    left.push_table(4, "Y")
    left.push_stream(4, "XXX", foreign_key=False)
    assert left.take() == [(k, f"XXX{k}+null", k) for k in KEYS]
    left.push_stream(1, "Z", foreign_key=False, null_key=True)
    assert left.take() == [(None, "Z0+null", 4)]
    assert left.driver.metrics()["dropped_records"] == 0


def test_left_join_with_a_none_selected_key_issue_case():
    """Issue 39's case against Kafka Streams 4.3.1: stream ``o2 -> '|s2'`` at 13 whose
    selector returns None gives ``o2 -> joiner('|s2', None)`` at 13."""
    builder = StreamsBuilder()
    stream = builder.stream("s", consumed=Consumed.with_(S, S))
    table = builder.global_table("g", consumed=Consumed.with_(S, S))
    stream.left_join(table, lambda k, v: v.split("|")[0] or None, tostring_joiner) \
        .to("out", Produced.with_(S, S))
    with driver_for(builder) as driver:
        driver.create_input_topic("g", S, S).pipe_input("k1", "T", 1)
        stream_in = driver.create_input_topic("s", S, S)
        stream_in.pipe_input("o1", "k1|s1", 12)
        stream_in.pipe_input("o2", "|s2", 13)
        out = driver.create_output_topic("out", S, S)
        assert kvt(out.read_records_to_list()) == [("o1", "k1|s1+T", 12), ("o2", "|s2+null", 13)]


def test_global_store_is_queryable_and_piping_updates_it():
    p = Pusher(left=False, materialized=Materialized.as_("products"))
    try:
        p.push_table(2, "Y")
        store = p.driver.get_key_value_store("products")
        assert sorted(store.all()) == [("FKey0", "Y0"), ("FKey1", "Y1")]
        p.push_table_deletes(1)
        assert store.get("FKey0") is None and store.get("FKey1") == "Y1"
    finally:
        p.close()
