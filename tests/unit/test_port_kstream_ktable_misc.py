"""The stateless KStream / KTable unit tests of Kafka Streams not ported elsewhere, and the
co-partitioning part of the table-table left and outer join tests.

Sources (apache/kafka, streams/src/test/java/org/apache/kafka/streams/kstream/internals/):
KStreamMapTest, KStreamMapValuesTest, KStreamFlatMapValuesTest, KStreamSelectKeyTest,
KStreamFilterTest, KTableMapKeysTest, KTableKTableLeftJoinTest, KTableKTableOuterJoinTest.

Kafka captures results with a mock processor (``process(supplier)``); here the stream is
written to an output topic and read back, which gives the same (key, value, timestamp)
records in the same order. Kafka's test input topics are created with start time 0 and
auto-advance 0, so a record piped without a timestamp gets 0: the driver's wall clock
(``initial_wall_clock_time=0``) gives the same here.

Kafka's ``ValueMapperWithKey`` has no counterpart in API.md (``map_values`` and
``flat_map_values`` take ``fn(v)``); the ``...WithKeys`` tests use ``map`` / ``flat_map``
returning the unchanged key, which gives the records Kafka expects.

Already ported elsewhere and not repeated: KStreamFilterTest.testFilter / testFilterNot
(test_kstream_filter.py), the KTableKTable*JoinTest output sequences (test_ktable_ktable_joins.py,
test_port_suppress_table_joins.py), KStreamKTableJoinTest / KStreamKTableLeftJoinTest
(test_kstream_ktable_join.py, test_kstream_ktable_left_join.py).
"""
from __future__ import annotations

import pytest

from streamlib import Consumed, Produced, StreamsBuilder
from streamlib.processors import ProcessingError
from streamlib.topology import TopologyError

from join_helpers import tostring_joiner
from streams_helpers import I, S, driver_for, kvt


def _run_stream(build_step, records, in_serdes=(I, S), out_serdes=(I, S), topic="topic"):
    """Build ``topic`` -> build_step -> "output", pipe ``records`` (key, value, timestamp or
    None), return the output's (key, value, timestamp) list."""
    builder = StreamsBuilder()
    build_step(builder.stream(topic, consumed=Consumed.with_(*in_serdes))).to(
        "output", produced=Produced.with_(*out_serdes))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic(topic, *in_serdes)
        out = driver.create_output_topic("output", *out_serdes)
        for key, value, ts in records:
            inp.pipe_input(key, value, ts)
        return kvt(out.read_records_to_list())


# -- KStreamMapTest -----------------------------------------------------------------------

def test_map():
    """KStreamMapTest.testMap: key and value swapped, each record keeps its own timestamp,
    even when timestamps go backwards (10, 9, 8, 7)."""
    records = [(k, f"V{k}", 10 - k) for k in (0, 1, 2, 3)]
    out = _run_stream(lambda s: s.map(lambda k, v: (v, k)), records, out_serdes=(S, I))
    assert out == [("V0", 0, 10), ("V1", 1, 9), ("V2", 2, 8), ("V3", 3, 7)]


def test_map_key_value_mapper_result_not_null():
    """KStreamMapTest.testKeyValueMapperResultNotNull: a mapper returning null (None) is an
    error naming the map node, not a dropped record (Kafka: NullPointerException)."""
    builder = StreamsBuilder()
    builder.stream("topic", consumed=Consumed.with_(S, I)).map(lambda k, v: None).to(
        "output", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        out = driver.create_output_topic("output", S, I)
        with pytest.raises(ProcessingError, match="KSTREAM-MAP"):
            driver.create_input_topic("topic", S, I).pipe_input("K", 0, 0)
        assert out.is_empty()


def test_map_type_variance():
    """KStreamMapTest.testTypeVariance: Integer/String records mapped to (key, key + ":" +
    value) and written to "strings" (Kafka only builds it; here it also runs)."""
    builder = StreamsBuilder()
    builder.stream("numbers", consumed=Consumed.with_(I, S)) \
        .map(lambda k, v: (k, f"{k}:{v}")).to("strings", produced=Produced.with_(I, S))
    with driver_for(builder) as driver:
        driver.create_input_topic("numbers", I, S).pipe_input(7, "seven", 3)
        assert kvt(driver.create_output_topic("strings", I, S).read_records_to_list()) == [(7, "7:seven", 3)]


# -- KStreamMapValuesTest -----------------------------------------------------------------

EXPECTED_KEYS_MV = (1, 10, 100, 1000)


def test_map_values():
    """KStreamMapValuesTest.testFlatMapValues (despite its name, ``mapValues(CharSequence::length)``):
    the value's length, key and timestamp (key / 2) unchanged."""
    records = [(k, str(k), k // 2) for k in EXPECTED_KEYS_MV]
    out = _run_stream(lambda s: s.map_values(len), records, out_serdes=(I, I))
    assert out == [(1, 1, 0), (10, 2, 5), (100, 3, 50), (1000, 4, 500)]


def test_map_values_with_keys():
    """KStreamMapValuesTest.testMapValuesWithKeys: value = length + key (the key-aware
    mapper written as a ``map`` keeping the key)."""
    records = [(k, str(k), k // 2) for k in EXPECTED_KEYS_MV]
    out = _run_stream(lambda s: s.map(lambda k, v: (k, len(v) + k)), records, out_serdes=(I, I))
    assert out == [(1, 2, 0), (10, 12, 5), (100, 103, 50), (1000, 1004, 500)]


# -- KStreamFlatMapValuesTest -------------------------------------------------------------

def test_flat_map_values():
    """KStreamFlatMapValuesTest.testFlatMapValues: Integer values, each gives "v" + value
    then "V" + value, in that order, with the input's key and timestamp."""
    records = [(k, k, 0) for k in (0, 1, 2, 3)]
    out = _run_stream(lambda s: s.flat_map_values(lambda v: [f"v{v}", f"V{v}"]), records,
                      in_serdes=(I, I), out_serdes=(I, S))
    assert out == [(0, "v0", 0), (0, "V0", 0), (1, "v1", 0), (1, "V1", 0),
                   (2, "v2", 0), (2, "V2", 0), (3, "v3", 0), (3, "V3", 0)]


def test_flat_map_values_with_keys():
    """KStreamFlatMapValuesTest.testFlatMapValuesWithKeys: "v" + value then "k" + key (the
    key-aware mapper written as a ``flat_map`` keeping the key)."""
    records = [(k, k, 0) for k in (0, 1, 2, 3)]
    out = _run_stream(lambda s: s.flat_map(lambda k, v: [(k, f"v{v}"), (k, f"k{k}")]), records,
                      in_serdes=(I, I), out_serdes=(I, S))
    assert out == [(0, "v0", 0), (0, "k0", 0), (1, "v1", 0), (1, "k1", 0),
                   (2, "v2", 0), (2, "k2", 0), (3, "v3", 0), (3, "k3", 0)]


# -- KStreamSelectKeyTest -----------------------------------------------------------------

def test_select_key():
    """KStreamSelectKeyTest.testSelectKey: values piped without key or timestamp; the new
    key comes from the value; timestamps are the input topic's 0."""
    key_map = {1: "ONE", 2: "TWO", 3: "THREE"}
    builder = StreamsBuilder()
    builder.stream("topic_key_select", consumed=Consumed.with_(S, I)) \
        .select_key(lambda k, v: key_map.get(v)).to("output", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic_key_select", S, I)
        for value in (1, 2, 3):
            inp.pipe_input(value=value)
        out = kvt(driver.create_output_topic("output", S, I).read_records_to_list())
    assert out == [("ONE", 1, 0), ("TWO", 2, 0), ("THREE", 3, 0)]


def test_select_key_type_variance():
    """KStreamSelectKeyTest.testTypeVariance: a stream ending in ``foreach`` builds (and,
    here, runs: the action sees the record)."""
    seen = []
    builder = StreamsBuilder()
    builder.stream("empty", consumed=Consumed.with_(I, S)).foreach(lambda k, v: seen.append((k, v)))
    with driver_for(builder) as driver:
        driver.create_input_topic("empty", I, S).pipe_input(1, "a", 0)
    assert seen == [(1, "a")]


# -- KStreamFilterTest --------------------------------------------------------------------

def test_filter_type_variance():
    """KStreamFilterTest.testTypeVariance: ``filter`` then ``filter_not`` with a predicate
    that accepts anything and is always false, to "nirvana": builds; run, ``filter`` drops
    every record, so nothing reaches the topic."""
    def number_key_predicate(key, value):
        return False

    out = _run_stream(lambda s: s.filter(number_key_predicate).filter_not(number_key_predicate),
                      [(1, "a", 0), (2, "b", 1)], topic="empty")
    assert out == []


# -- KTableMapKeysTest --------------------------------------------------------------------

def test_map_keys_converting_to_stream():
    """KTableMapKeysTest.testMapKeysConvertingToStream: ``to_stream`` with a key mapper
    (1 -> ONE, 2 -> TWO, 3 -> THREE); timestamps 5, 10, 15 kept."""
    key_map = {1: "ONE", 2: "TWO", 3: "THREE"}
    builder = StreamsBuilder()
    builder.table("topic_map_keys", consumed=Consumed.with_(I, S)) \
        .to_stream(lambda k, v: key_map.get(k)).to("output", produced=Produced.with_(S, S))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic_map_keys", I, S)
        for i, (key, value) in enumerate(zip((1, 2, 3), ("V_ONE", "V_TWO", "V_THREE"))):
            inp.pipe_input(key, value, 5 + i * 5)
        out = kvt(driver.create_output_topic("output", S, S).read_records_to_list())
    assert out == [("ONE", "V_ONE", 5), ("TWO", "V_TWO", 10), ("THREE", "V_THREE", 15)]


# -- KTableKTableLeftJoinTest / KTableKTableOuterJoinTest ---------------------------------

@pytest.mark.parametrize("how", ["left_join", "outer_join"])
def test_table_table_join_copartition_group(how):
    """KTableKTableLeftJoinTest.testJoin and KTableKTableOuterJoinTest.testJoin (their
    co-partitioning assertion): both tables' topics form one co-partition group, i.e. are
    read by one stateful sub-topology, and must have equal partition counts. (The output
    sequence of testJoin is in test_ktable_ktable_joins.py.)"""
    builder = StreamsBuilder()
    table1 = builder.table("topic1", consumed=Consumed.with_(I, S))
    table2 = builder.table("topic2", consumed=Consumed.with_(I, S))
    getattr(table1, how)(table2, tostring_joiner).to_stream().to("output", produced=Produced.with_(I, S))
    topology = builder.build()
    groups = [sorted(sub.source_topics) for sub in topology.subtopologies if sub.stateful]
    assert groups == [["topic1", "topic2"]]
    topology.check_copartitioned({"topic1": 3, "topic2": 3})
    with pytest.raises(TopologyError, match="topic1.*topic2|topic2.*topic1"):
        topology.check_copartitioned({"topic1": 2, "topic2": 3})
