"""KStream–KTable inner join (grace 0), ported from Kafka Streams' KStreamKTableJoinTest."""
from __future__ import annotations

import random

import pytest

from streamlib import Consumed, Joined, Produced, StreamsBuilder
from streamlib.topology import TopologyError

from join_helpers import push, tostring_joiner
from streams_helpers import I, S, driver_for, kvt

CONSUMED = Consumed.with_(I, S)


def _topology(left: bool = False):
    builder = StreamsBuilder()
    stream = builder.stream("streamTopic", consumed=CONSUMED)
    table = builder.table("tableTopic", consumed=CONSUMED)
    joined = stream.left_join(table, tostring_joiner) if left else stream.join(table, tostring_joiner)
    joined.to("out", produced=Produced.with_(I, S))
    return builder


@pytest.fixture
def topics():
    """(stream input, table input, output, driver) over the join topology."""
    with driver_for(_topology()) as driver:
        yield (driver.create_input_topic("streamTopic", I, S), driver.create_input_topic("tableTopic", I, S),
               driver.create_output_topic("out", I, S), driver)


def _random_times(n: int) -> list[int]:
    rng = random.Random(7)
    return [rng.randrange(2**31 - 1) for _ in range(n)]


def test_should_not_join_with_empty_table_on_stream_updates(topics):
    """KStreamKTableJoinTest.shouldNotJoinWithEmptyTableOnStreamUpdates."""
    stream, _, out, _ = topics
    push(stream, 2, "X")
    assert out.is_empty()


def test_should_not_join_on_table_updates(topics):
    """KStreamKTableJoinTest.shouldNotJoinOnTableUpdates: table records (at random, later
    timestamps) never trigger; stream records meet the table's latest value."""
    stream, table, out, _ = topics
    push(stream, 2, "X")
    assert out.is_empty()
    push(table, 2, "Y", _random_times(2))
    assert out.is_empty()
    push(stream, 4, "X")
    assert kvt(out.read_records_to_list()) == [(0, "X0+Y0", 0), (1, "X1+Y1", 1)]
    push(table, 4, "YY", _random_times(4))
    assert out.is_empty()
    push(stream, 4, "X")
    assert kvt(out.read_records_to_list()) == [(0, "X0+YY0", 0), (1, "X1+YY1", 1),
                                               (2, "X2+YY2", 2), (3, "X3+YY3", 3)]
    push(table, 4, "YYY", _random_times(4))
    assert out.is_empty()


def test_should_join_only_if_match_found_on_stream_updates(topics):
    """KStreamKTableJoinTest.shouldJoinOnlyIfMatchFoundOnStreamUpdates."""
    stream, table, out, _ = topics
    push(table, 2, "Y", _random_times(2))
    assert out.is_empty()
    push(stream, 4, "X")
    assert kvt(out.read_records_to_list()) == [(0, "X0+Y0", 0), (1, "X1+Y1", 1)]


def test_should_clear_table_entry_on_null_value_updates(topics):
    """KStreamKTableJoinTest.shouldClearTableEntryOnNullValueUpdates: a tombstone deletes
    the row, so later stream records for that key do not join."""
    stream, table, out, _ = topics
    push(table, 4, "Y", _random_times(4))
    push(stream, 4, "X")
    assert kvt(out.read_records_to_list()) == [(0, "X0+Y0", 0), (1, "X1+Y1", 1),
                                               (2, "X2+Y2", 2), (3, "X3+Y3", 3)]
    table.pipe_input(0, None)
    table.pipe_input(1, None)
    assert out.is_empty()
    push(stream, 4, "XX")
    assert kvt(out.read_records_to_list()) == [(2, "XX2+Y2", 2), (3, "XX3+Y3", 3)]


def test_should_log_and_meter_when_skipping_null_left_key(topics):
    """KStreamKTableJoinTest.shouldLogAndMeterWhenSkippingNullLeftKey: dropped and counted."""
    stream, table, out, driver = topics
    table.pipe_input(1, "Y1", 0)
    stream.pipe_input(None, "A", 0)
    assert out.is_empty()
    assert driver.metrics()["dropped_records"] == 1


def test_should_log_and_meter_when_skipping_null_left_value(topics):
    """KStreamKTableJoinTest.shouldLogAndMeterWhenSkippingNullLeftValue: a None stream value
    is dropped and counted, even when the table has a row for the key."""
    stream, table, out, driver = topics
    table.pipe_input(1, "Y1", 0)
    stream.pipe_input(1, None, 0)
    assert out.is_empty()
    assert driver.metrics()["dropped_records"] == 1


def test_should_require_copartitioned_streams():
    """KStreamKTableJoinTest.shouldRequireCopartitionedStreams: stream and table topics are
    read by one sub-topology (one co-partition group), the join sharing the table's store."""
    topology = _topology().build()
    [sub] = [s for s in topology.subtopologies if s.stateful]
    assert sorted(sub.source_topics) == ["streamTopic", "tableTopic"]
    join = next(n for n in topology if n.kind == "stream_table_join")
    table = next(n for n in topology if n.kind == "table_source")
    assert join.stores == table.stores and join.name in sub.nodes
    with pytest.raises(TopologyError, match="streamTopic.*tableTopic|tableTopic.*streamTopic"):
        topology.check_copartitioned({"streamTopic": 2, "tableTopic": 3})


def _rekeyed_joins(joined1=None, joined2=None):
    builder = StreamsBuilder()
    stream_a = builder.stream("topic", consumed=Consumed.with_(S, S))
    table_b = builder.table("topic2", consumed=Consumed.with_(S, S))
    table_c = builder.table("topic3", consumed=Consumed.with_(S, S))
    rekeyed = stream_a.map(lambda k, v: (v, k))
    rekeyed.join(table_b, lambda v1, v2: v1 + v2, joined1).to("out-one")
    rekeyed.join(table_c, lambda v1, v2: v1 + v2, joined2).to("out-two")
    return builder


def test_should_reuse_repartition_topic_with_generated_name():
    """KStreamKTableJoinTest.shouldReuseRepartitionTopicWithGeneratedName: a re-keyed stream is
    repartitioned once for both joins; both joins and both tables share one sub-topology."""
    topology = _rekeyed_joins().build()
    sinks = [n for n in topology if n.kind == "repartition"]
    assert len(sinks) == 1
    topic = sinks[0].params.topic
    assert topic == "KSTREAM-MAP-0000000007-repartition"   # Kafka's name: the re-keying step's
    assert len(topology.subtopologies) == 2
    assert sorted(topology.subtopologies[1].input_topics) == sorted(["topic2", "topic3", topic])
    assert "(topics: [app-" + topic + "])" in topology.describe("app")


def test_should_create_repartition_topics_with_user_provided_name():
    """KStreamKTableJoinTest.shouldCreateRepartitionTopicsWithUserProvidedName: named joins get
    their own ``<name>-repartition`` topics and sub-topologies, the join steps their names."""
    topology = _rekeyed_joins(Joined.with_(S, S, S, name="first-join"),
                              Joined.with_(S, S, S, name="second-join")).build()
    assert sorted(n.params.topic for n in topology if n.kind == "repartition") == [
        "first-join-repartition", "second-join-repartition"]
    assert len(topology.subtopologies) == 3
    by_join = {name: topology.subtopology_of(name) for name in ("first-join", "second-join")}
    assert sorted(by_join["first-join"].input_topics) == ["first-join-repartition", "topic2"]
    assert sorted(by_join["second-join"].input_topics) == ["second-join-repartition", "topic3"]


def test_rekeyed_stream_joins_through_the_repartition():
    """The re-keyed stream of KStreamKTableJoinTest's topology tests, run: records are joined
    on their new key after the repartition."""
    with driver_for(_rekeyed_joins()) as driver:
        driver.create_input_topic("topic2", S, S).pipe_input("b", "B", 0)
        driver.create_input_topic("topic", S, S).pipe_input("k", "b", 5)
        assert kvt(driver.create_output_topic("out-one", S, S).read_records_to_list()) == [("b", "kB", 5)]
        assert driver.create_output_topic("out-two", S, S).is_empty()


def test_grace_builds_the_versioned_join():
    """Kafka needs a versioned table for a grace period (KIP-923); here grace > 0 builds
    the join with its own versioned store and stream buffer (the late-update
    re-trigger, tests/unit/test_kstream_ktable_grace_join.py), and no longer fails."""
    builder = StreamsBuilder()
    table = builder.table("t", consumed=CONSUMED)
    builder.stream("s", consumed=CONSUMED).join(table, tostring_joiner, Joined.with_(grace=5)).to("o")
    topology = builder.build()
    assert sorted(d.kind.value for d in topology.stores.values()) == ["kv", "stream_buffer", "versioned"]
    assert {n.kind for n in topology.nodes.values()} >= {"stream_table_join_versioned",
                                                           "stream_table_join_update"}


def test_table_without_store_is_materialized_for_the_join():
    """A filtered table without ``materialized`` gets a store the join looks rows up in; rows
    the filter removes do not join."""
    builder = StreamsBuilder()
    table = builder.table("tableTopic", consumed=CONSUMED).filter(lambda k, v: not v.endswith("1"))
    builder.stream("streamTopic", consumed=CONSUMED).join(table, tostring_joiner).to(
        "out", produced=Produced.with_(I, S))
    topology = builder.build()
    join = next(n for n in topology if n.kind == "stream_table_join")
    filt = next(n for n in topology if n.kind == "table_filter")
    assert join.stores == filt.stores != ()
    with driver_for(topology) as driver:
        push(driver.create_input_topic("tableTopic", I, S), 3, "Y")
        push(driver.create_input_topic("streamTopic", I, S), 3, "X")
        assert kvt(driver.create_output_topic("out", I, S).read_records_to_list()) == [
            (0, "X0+Y0", 0), (2, "X2+Y2", 2)]
