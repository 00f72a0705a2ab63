"""Kafka Streams' own tests for the builder, repartitioning and self-joins, ported to
streamlib's API with their expected results unchanged.

Sources (apache/kafka, streams/src/test/java/org/apache/kafka/streams/):
StreamsBuilderTest; kstream/internals/KStreamKStreamSelfJoinTest,
KStreamRepartitionTest, KStreamImplTest (its repartition methods);
integration/KStreamRepartitionIntegrationTest,
integration/StreamTableJoinTopologyOptimizationIntegrationTest;
processor/internals/RepartitionOptimizingTest and RepartitionWithMergeOptimizingTest
(the driver-based successors of the *IntegrationTest classes of the same names).

Kafka captures results with a mock processor (``process(supplier)``); here the stream
goes to a topic and the test reads it, which shows the same records in the same order.
Topology optimization is not part of streamlib's API, so the optimization tests are
ported with their NO_OPTIMIZATION expectations (the records a user sees are the same
under both settings). Partition counts Kafka reads back from the broker are checked
with ``Topology.check_copartitioned`` (what ``start()`` runs with the topics' counts).

Already ported elsewhere and not repeated: KStreamImplTest.shouldSendDataToTopicUsingProduced,
shouldMergeMultipleStreams, shouldPropagateRepartitionFlagAfterGlobalKTableJoin
(test_port_kstream_joins.py); StreamsBuilderTest.shouldMergeStreams,
shouldNotAllowReadingFromOverlappingAndUnequalCollectionOfTopics (test_kstream_branch_merge.py,
test_topology_describe.py); KStreamRepartitionIntegrationTest
.shouldThrowAnExceptionWhenNumberOfPartitionsOfRepartitionOperationDoNotMatchSourceTopicWhenJoining,
shouldCreateRepartitionTopicIfKeyChangingOperationWasNotPerformed,
shouldCreateOnlyOneRepartitionTopicWhenRepartitionIsFollowedByGroupByKey
(test_kstream_kstream_join.py, test_kstream_to_table_repartition.py).

Not ported (outside streamlib's API): Processor API (shouldAddGlobalStore), Named /
Consumed.as / StreamJoined.withName processor names, store suppliers and store types
(shouldUseDslStoreSupplier*, shouldThrowOnVersionedStoreSupplierForGlobalTable), offset
reset policies and Pattern subscriptions, topology optimization settings
(shouldReuseSourceTopicAsChangelogsWithOptimization20, the OPTIMIZED variants),
StreamPartitioner (KStreamRepartitionTest's partitioner checks,
KStreamRepartitionIntegrationTest.shouldRepartitionToMultiplePartitions,
shouldUseStreamPartitionerForRepartitionOperation), several instances
(shouldGoThroughRebalancingCorrectly), and KStreamImplTest.shouldNotAllowNullRepartitionedOnRepartition
(API.md makes ``repartition(None)`` the default repartition).
"""
from __future__ import annotations

import re
from collections import defaultdict

import pytest

from streamlib import (Consumed, Grouped, Joined, JoinWindows, Materialized, Produced, Repartitioned,
                       Serdes, StreamsBuilder, TopologyError)

from streams_helpers import APP, I, L, S, driver_for, kvt

REPARTITION_SINK = re.compile(r"Sink: .*-repartition")
DAY_MS = 24 * 60 * 60 * 1000
#: the integration tests' default serdes (Integer keys, String values)
INTEGRATION_DEFAULTS = dict(default_key_serde=I, default_value_serde=S)


def tostring_joiner(v1, v2):
    """Kafka's MockValueJoiner.TOSTRING_JOINER."""
    return f"{v1}+{v2}"


def processor_stores(topology) -> dict[str, list[str]]:
    """Processor name -> the stores ``describe()`` lists for it."""
    text = topology.describe(APP)
    return {m.group(1): [s for s in m.group(2).split(", ") if s]
            for m in re.finditer(r"Processor: (\S+) \(stores: \[(.*?)\]\)", text)}


def stores_of_kind(topology, prefix: str) -> list[str]:
    """The stores of the processors whose name starts with ``prefix``."""
    return sorted({s for name, stores in processor_stores(topology).items()
                   if name.startswith(prefix) for s in stores})


def changelogs_by_subtopology(topology) -> dict[int, set[str]]:
    text = topology.describe(APP)
    result: dict[int, set[str]] = defaultdict(set)
    for index, part in enumerate(re.split(r"   Sub-topology: \d+\n", text)[1:]):
        result[index] = set(re.findall(r"Changelog: (\S+) \(store:", part))
    return dict(result)


# --------------------------------------------------------------------------------------
# StreamsBuilderTest
# --------------------------------------------------------------------------------------

def test_processing_from_sink_topic():
    """StreamsBuilderTest.shouldProcessingFromSinkTopic: a stream written to a topic is
    still processed downstream of its source."""
    builder = StreamsBuilder()
    source = builder.stream("topic-source")
    source.to("topic-sink")
    source.to("captured")
    with driver_for(builder) as driver:
        driver.create_input_topic("topic-source", S, S).pipe_input("A", "aa", 0)
        assert kvt(driver.create_output_topic("captured", S, S).read_records_to_list()) == [("A", "aa", 0)]
        assert kvt(driver.create_output_topic("topic-sink", S, S).read_records_to_list()) == [("A", "aa", 0)]


def test_process_via_repartition_topic():
    """StreamsBuilderTest.shouldProcessViaRepartitionTopic: both the source stream and the
    stream read back from its repartition topic see the record."""
    builder = StreamsBuilder()
    source = builder.stream("topic-source")
    through = source.repartition()
    source.to("from-source")
    through.to("from-through")
    with driver_for(builder) as driver:
        driver.create_input_topic("topic-source", S, S).pipe_input("A", "aa", 0)
        assert kvt(driver.create_output_topic("from-source", S, S).read_records_to_list()) == [("A", "aa", 0)]
        assert kvt(driver.create_output_topic("from-through", S, S).read_records_to_list()) == [("A", "aa", 0)]


# Not ported: StreamsBuilderTest.shouldAllowJoinUnmaterializedFilteredKTable,
# shouldAllowJoinMaterializedFilteredKTable, shouldAllowJoinUnmaterializedMapValuedKTable,
# shouldAllowJoinMaterializedMapValuedKTable, shouldAllowJoinUnmaterializedJoinedKTable and
# shouldNotMaterializeStoresIfNotRequired count the stores Kafka creates. streamlib keeps
# a store for every table source and gives an unmaterialized table a join reads a lookup
# store of its own (KTable._lookup_store) instead of Kafka's value getters: more stores
# and changelog topics, the same results (the joins' ports check those).


def test_join_materialized_joined_ktable():
    """StreamsBuilderTest.shouldAllowJoinMaterializedJoinedKTable: three stores; the
    stream join and the table join's merge both use "store"."""
    builder = StreamsBuilder()
    table1 = builder.table("table-topic1")
    table2 = builder.table("table-topic2")
    builder.stream("stream-topic").join(
        table1.join(table2, tostring_joiner, materialized=Materialized.as_("store")), tostring_joiner)
    topology = builder.build()
    assert len(topology.stores) == 3
    assert stores_of_kind(topology, "KSTREAM-JOIN") == ["store"]
    assert stores_of_kind(topology, "KTABLE-MERGE") == ["store"]


def test_join_materialized_source_ktable():
    """StreamsBuilderTest.shouldAllowJoinMaterializedSourceKTable (structure): one store,
    shared by the table source and the join."""
    builder = StreamsBuilder()
    table = builder.table("table-topic")
    builder.stream("stream-topic").join(table, tostring_joiner)
    topology = builder.build()
    assert len(topology.stores) == 1
    (store,) = topology.stores
    assert stores_of_kind(topology, "KTABLE-SOURCE") == [store]
    assert stores_of_kind(topology, "KSTREAM-JOIN") == [store]


def test_generated_names_of_table_store_and_join():
    """StreamsBuilderTest.shouldAllowJoinMaterializedSourceKTable (its names): Kafka names a
    table's generated store after the topic, numbered before the table's source nodes,
    so the table source is KTABLE-SOURCE-0000000002 and the join KSTREAM-JOIN-0000000004;
    the store's changelog is named after the store."""
    builder = StreamsBuilder()
    table = builder.table("table-topic")
    builder.stream("stream-topic").join(table, tostring_joiner)
    topology = builder.build()
    stores = processor_stores(topology)
    assert stores["KTABLE-SOURCE-0000000002"] == ["table-topic-STATE-STORE-0000000000"]
    assert stores["KSTREAM-JOIN-0000000004"] == ["table-topic-STATE-STORE-0000000000"]
    assert (f"Changelog: {APP}-table-topic-STATE-STORE-0000000000-changelog "
            "(store: table-topic-STATE-STORE-0000000000)") in topology.describe(APP)


def test_generated_names_of_global_table_stores():
    """StreamsBuilderTest.shouldUseSpecifiedNameForGlobalTableSourceProcessor (its store
    names, which Consumed.as does not change): global stores are named after their topic
    and numbered by the builder's counter (three names per global table)."""
    builder = StreamsBuilder()
    builder.global_table("stream-topic")
    builder.global_table("stream-topic-two")
    topology = builder.build()
    assert sorted(topology.global_stores()) == ["stream-topic-STATE-STORE-0000000000",
                                                "stream-topic-two-STATE-STORE-0000000003"]


def test_generated_store_names_of_stream_stream_join():
    """StreamsBuilderTest.shouldUseGeneratedNameForJoinOperationBetweenKStreamAndKStream
    (its store names; StreamJoined.withName renames processors only)."""
    builder = StreamsBuilder()
    builder.stream("stream-topic").join(builder.stream("stream-topic-two"), lambda v1, v2: v1,
                                        JoinWindows.of_time_difference(60 * 60 * 1000, grace=DAY_MS - 2 * 3600_000),
                                        stream_joined=Joined.with_(S, S, S))
    assert sorted(builder.build().stores) == ["KSTREAM-JOINOTHER-0000000005-store",
                                              "KSTREAM-JOINTHIS-0000000004-store"]


def test_generated_store_names_of_stream_stream_left_join():
    """StreamsBuilderTest.shouldUseGeneratedStoreNamesForLeftJoinOperationBetweenKStreamAndKStream."""
    builder = StreamsBuilder()
    builder.stream("stream-topic").left_join(builder.stream("stream-topic-two"), lambda v1, v2: v1,
                                             JoinWindows.of_time_difference_with_no_grace(60 * 60 * 1000),
                                             stream_joined=Joined.with_(S, S, S))
    assert sorted(builder.build().stores) == ["KSTREAM-JOINTHIS-0000000004-store",
                                              "KSTREAM-OUTEROTHER-0000000005-store",
                                              "KSTREAM-OUTERSHARED-0000000004-store"]


def test_generated_store_names_of_stream_stream_outer_join():
    """StreamsBuilderTest.shouldUseGeneratedStoreNamesForOuterJoinOperationBetweenKStreamAndKStream."""
    builder = StreamsBuilder()
    builder.stream("stream-topic").outer_join(builder.stream("stream-topic-two"), lambda v1, v2: v1,
                                              JoinWindows.of_time_difference_with_no_grace(60 * 60 * 1000),
                                              stream_joined=Joined.with_(S, S, S))
    assert sorted(builder.build().stores) == ["KSTREAM-OUTEROTHER-0000000005-store",
                                              "KSTREAM-OUTERSHARED-0000000004-store",
                                              "KSTREAM-OUTERTHIS-0000000004-store"]


def test_serdes_defined_in_materialized_consume_table():
    """StreamsBuilderTest.shouldUseSerdesDefinedInMaterializedToConsumeTable: without
    Consumed serdes, the table's Materialized serdes read the topic."""
    builder = StreamsBuilder()
    results = {}
    builder.table("topic", materialized=Materialized.as_("store").with_key_serde(L).with_value_serde(S)) \
        .to_stream().foreach(lambda k, v: results.__setitem__(k, v))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic", L, S)
        inp.pipe_input(1, "value1")
        inp.pipe_input(2, "value2")
        store = driver.get_key_value_store("store")
        assert store.get(1) == "value1"
        assert store.get(2) == "value2"
    assert results == {1: "value1", 2: "value2"}


def test_serdes_defined_in_materialized_consume_global_table():
    """StreamsBuilderTest.shouldUseSerdesDefinedInMaterializedToConsumeGlobalTable."""
    builder = StreamsBuilder()
    builder.global_table("topic", materialized=Materialized.as_("store").with_key_serde(L).with_value_serde(S))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic", L, S)
        inp.pipe_input(1, "value1")
        inp.pipe_input(2, "value2")
        store = driver.get_key_value_store("store")
        assert store.get(1) == "value1"
        assert store.get(2) == "value2"


def test_repartition_topic_is_not_reused_as_changelog():
    """StreamsBuilderTest.shouldNotReuseRepartitionTopicAsChangelogs: a table read from a
    repartition topic keeps its own changelog, ``<app>-store-changelog``, in
    sub-topology 1 (the same without optimization, Kafka's default)."""
    builder = StreamsBuilder()
    builder.stream("topic", consumed=Consumed.with_(L, S)).repartition().to_table(Materialized.as_("store"))
    topology = builder.build()
    assert list(topology.stores) == ["store"]
    assert topology.stores["store"].logging
    assert changelogs_by_subtopology(topology)[1] == {f"{APP}-store-changelog"}


def test_source_topic_is_not_reused_as_changelog_by_default():
    """StreamsBuilderTest.shouldNotReuseSourceTopicAsChangelogsByDefault."""
    builder = StreamsBuilder()
    builder.table("topic", materialized=Materialized.as_("store"))
    topology = builder.build()
    assert list(topology.stores) == ["store"]
    assert topology.stores["store"].logging
    assert changelogs_by_subtopology(topology)[0] == {f"{APP}-store-changelog"}


def test_stream_without_topics_fails():
    """StreamsBuilderTest.shouldThrowExceptionWhenNoTopicPresent."""
    builder = StreamsBuilder()
    with pytest.raises(TopologyError):
        builder.stream([])
        builder.build()


def test_stream_with_none_topic_names_fails():
    """StreamsBuilderTest.shouldThrowExceptionWhenTopicNamesAreNull (Kafka: a
    NullPointerException at build())."""
    builder = StreamsBuilder()
    with pytest.raises((TopologyError, TypeError, ValueError)):
        builder.stream([None, None])
        builder.build()


def test_streams_from_same_topic_are_allowed():
    """StreamsBuilderTest.shouldAllowStreamsFromSameTopic: two streams of one topic build
    (Kafka merges them into one source node)."""
    builder = StreamsBuilder()
    builder.stream("topic")
    builder.stream("topic")
    builder.build()


def test_streams_from_same_collection_of_topics_are_allowed():
    """StreamsBuilderTest.shouldAllowReadingFromSameCollectionOfTopics."""
    builder = StreamsBuilder()
    builder.stream(["topic1", "topic2"])
    builder.stream(["topic2", "topic1"])
    builder.build()


def test_streams_from_same_topic_both_see_every_record():
    """StreamsBuilderTest.shouldAllowStreamsFromSameTopic, run: each of the two streams of
    one topic sees every record (what Kafka's merged source node does)."""
    builder = StreamsBuilder()
    builder.stream("topic", consumed=Consumed.with_(S, S)).to("out1")
    builder.stream("topic", consumed=Consumed.with_(S, S)).map_values(str.upper).to("out2")
    with driver_for(builder) as driver:
        driver.create_input_topic("topic", S, S).pipe_input("k", "v", 7)
        assert kvt(driver.create_output_topic("out1", S, S).read_records_to_list()) == [("k", "v", 7)]
        assert kvt(driver.create_output_topic("out2", S, S).read_records_to_list()) == [("k", "V", 7)]


def test_tables_from_same_topic_fail():
    """StreamsBuilderTest.shouldNotAllowTablesFromSameTopic."""
    builder = StreamsBuilder()
    with pytest.raises(TopologyError):
        builder.table("topic")
        builder.table("topic")
        builder.build()


def test_stream_and_table_from_same_topic_fail():
    """StreamsBuilderTest.shouldNowAllowStreamAndTableFromSameTopic."""
    builder = StreamsBuilder()
    with pytest.raises(TopologyError):
        builder.stream("topic")
        builder.table("topic")
        builder.build()


# --------------------------------------------------------------------------------------
# KStreamKStreamSelfJoinTest
# --------------------------------------------------------------------------------------
# Kafka checks that the optimized self-join emits exactly what the plain inner join of
# two streams of the same topic emits. The expected lists below are that plain join's
# output in Kafka (this side joins first, against the other side's store without the
# record; then the other side, whose lookup includes the record itself; window stores
# drop what is older than stream time - (before + after + grace)). Each is checked for
# a stream joined with itself and for two streams of the same topic (the Kafka tests'
# two shapes).

SELF_JOIN_SHAPES = ["one-stream", "two-streams"]


def self_joined(shape: str, windows: JoinWindows):
    builder = StreamsBuilder()
    s1 = builder.stream("topic1", consumed=Consumed.with_(S, S))
    s2 = s1 if shape == "one-stream" else builder.stream("topic1", consumed=Consumed.with_(S, S))
    s1.join(s2, lambda v, v2: v + v2, windows, stream_joined=Joined.with_(S, S, S)) \
        .to("out", Produced.with_(S, S))
    return builder


def run_self_join(shape, windows, inputs):
    with driver_for(self_joined(shape, windows)) as driver:
        inp = driver.create_input_topic("topic1", S, S)
        for k, v, ts in inputs:
            inp.pipe_input(k, v, ts)
        return kvt(driver.create_output_topic("out", S, S).read_records_to_list())


@pytest.mark.parametrize("shape", SELF_JOIN_SHAPES)
def test_self_join_matches_inner_join(shape):
    """KStreamKStreamSelfJoinTest.shouldMatchInnerJoinWithSelfJoinWithSingleStream and
    shouldMatchInnerJoinWithSelfJoinWithTwoStreams: 100 ms, no grace."""
    got = run_self_join(shape, JoinWindows.of_time_difference_with_no_grace(100),
                        [("A", "1", 1), ("B", "1", 2), ("A", "2", 3), ("B", "2", 4), ("B", "3", 5)])
    assert got == [
        ("A", "11", 1),
        ("B", "11", 2),
        ("A", "21", 3), ("A", "12", 3), ("A", "22", 3),
        ("B", "21", 4), ("B", "12", 4), ("B", "22", 4),
        ("B", "31", 5), ("B", "32", 5), ("B", "13", 5), ("B", "23", 5), ("B", "33", 5)]


@pytest.mark.parametrize("shape", SELF_JOIN_SHAPES)
def test_self_join_different_before_after_windows(shape):
    """KStreamKStreamSelfJoinTest.shouldMatchInnerJoinWithSelfJoinDifferentBeforeAfterWindows:
    ``ofTimeDifferenceAndGrace(11 s, 10 s)``."""
    got = run_self_join(shape, JoinWindows.of_time_difference_and_grace(11_000, 10_000),
                        [("A", "1", 0), ("A", "2", 11_000), ("B", "1", 12_000), ("A", "3", 13_000),
                         ("A", "4", 15_000), ("C", "1", 16_000), ("D", "1", 17_000), ("A", "5", 30_000)])
    assert got == [
        ("A", "11", 0),
        ("A", "21", 11_000), ("A", "12", 11_000), ("A", "22", 11_000),
        ("B", "11", 12_000),
        ("A", "32", 13_000), ("A", "23", 13_000), ("A", "33", 13_000),
        ("A", "42", 15_000), ("A", "43", 15_000), ("A", "24", 15_000), ("A", "34", 15_000),
        ("A", "44", 15_000),
        ("C", "11", 16_000),
        ("D", "11", 17_000),
        ("A", "55", 30_000)]


@pytest.mark.parametrize("shape", SELF_JOIN_SHAPES)
def test_self_join_out_of_order_messages(shape):
    """KStreamKStreamSelfJoinTest.shouldMatchInnerJoinWithSelfJoinOutOfOrderMessages:
    ``ofTimeDifferenceWithNoGrace(10 s)``; the late A:5 at 6000 comes when stream time is
    30000, so the stores (retention 20 s) no longer return records older than 10001: it
    joins A:3 and A:4 only, and not itself."""
    got = run_self_join(shape, JoinWindows.of_time_difference_with_no_grace(10_000),
                        [("A", "1", 0), ("A", "2", 9_999), ("B", "1", 11_000), ("A", "3", 13_000),
                         ("A", "4", 15_000), ("C", "1", 16_000), ("D", "1", 17_000), ("A", "5", 30_000),
                         ("A", "5", 6_000)])
    assert got == [
        ("A", "11", 0),
        ("A", "21", 9_999), ("A", "12", 9_999), ("A", "22", 9_999),
        ("B", "11", 11_000),
        ("A", "32", 13_000), ("A", "23", 13_000), ("A", "33", 13_000),
        ("A", "42", 15_000), ("A", "43", 15_000), ("A", "24", 15_000), ("A", "34", 15_000),
        ("A", "44", 15_000),
        ("C", "11", 16_000),
        ("D", "11", 17_000),
        ("A", "55", 30_000),
        ("A", "53", 13_000), ("A", "54", 15_000), ("A", "35", 13_000), ("A", "45", 15_000)]


# --------------------------------------------------------------------------------------
# KStreamRepartitionTest
# --------------------------------------------------------------------------------------

def test_repartition_topic_records_are_readable_in_the_driver():
    """KStreamRepartitionTest.shouldInvokePartitionerWhenSet (without the partitioner):
    the records written to the repartition topic ``<app>-test-repartition`` can be read
    from the driver, keys, values and timestamps unchanged."""
    builder = StreamsBuilder()
    builder.stream("input-topic", consumed=Consumed.with_(I, S)).repartition(Repartitioned.as_("test"))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input-topic", I, S)
        for i, key in enumerate([0, 1]):
            inp.pipe_input(key, f"X{key}", i + 10)
        out = driver.create_output_topic(f"{APP}-test-repartition", I, S)
        assert kvt(out.read_records_to_list()) == [(0, "X0", 10), (1, "X1", 11)]
        assert out.read_records_to_list() == []


def test_repartitions_with_different_fixed_partition_counts_cannot_be_joined():
    """KStreamRepartitionTest.shouldThrowAnExceptionWhenNumberOfPartitionsOfRepartitionOperationsDoNotMatchWhenJoining:
    both sides repartitioned to fixed, different counts (4 and 2) cannot be joined; Kafka
    fails at build() naming both topics with their counts. (streamlib may fail at build()
    or at start(); any source partition counts give the error.)"""
    builder = StreamsBuilder()
    topic_b = builder.stream("topic-b", consumed=Consumed.with_(I, S)) \
        .repartition(Repartitioned.as_("topic-b-scale-up").with_num_partitions(2))
    builder.stream("input-topic", consumed=Consumed.with_(I, S)) \
        .repartition(Repartitioned.as_("input-topic-scale-up").with_num_partitions(4)) \
        .join(topic_b, lambda v1, v2: v2, JoinWindows.of_time_difference(10_000, grace=DAY_MS - 20_000)) \
        .to("topic-output")
    with pytest.raises(TopologyError) as failure:
        builder.build().check_copartitioned({"input-topic": 3, "topic-b": 3})
    message = str(failure.value)
    assert re.search(r"input-topic-scale-up-repartition\W+\(?4", message)
    assert re.search(r"topic-b-scale-up-repartition\W+\(?2", message)


# --------------------------------------------------------------------------------------
# KStreamImplTest (repartition methods)
# --------------------------------------------------------------------------------------

def extract_from_key(key, value, record_timestamp):
    """A timestamp extractor whose result changes when the key does."""
    return 1000 - ord(key[0])


def test_repartition_source_uses_the_record_timestamp_not_the_extractor():
    """KStreamImplTest.shouldUseRecordMetadataTimestampExtractorWithRepartition: the
    user's extractor applies to the topics it was given for; the repartition topic's
    source takes the record's own timestamp (FailOnInvalidTimestamp), so a record keeps
    the timestamp extracted at the original source after its key changes."""
    builder = StreamsBuilder()
    s1 = builder.stream(["topic-1", "topic-2"], consumed=Consumed.with_(S, S, timestamp_extractor=extract_from_key))
    s2 = builder.stream(["topic-3", "topic-4"], consumed=Consumed.with_(S, S, timestamp_extractor=extract_from_key))
    s1.to("topic-5")
    s2.map(lambda k, v: (v, v)).repartition(Repartitioned.as_("topic-6")).to("out")
    with driver_for(builder) as driver:
        driver.create_input_topic("topic-1", S, S).pipe_input("a", "x", 5)
        driver.create_input_topic("topic-4", S, S).pipe_input("a", "x", 5)
        assert kvt(driver.create_output_topic("topic-5", S, S).read_records_to_list()) == [("a", "x", 903)]
        assert kvt(driver.create_output_topic("out", S, S).read_records_to_list()) == [("x", "x", 903)]


def test_join_repartition_source_uses_the_record_timestamp_not_the_extractor():
    """KStreamImplTest.shouldUseRecordMetadataTimestampExtractorWhenInternalRepartitioningTopicCreated
    (and ...WithRetention): a re-keyed stream joined with its own source: the original
    source uses the user's extractor, the join's repartition source the record timestamp,
    so the left record keeps 903 (re-extracting from its new key would give 880) and the
    result carries max(903, 880)."""
    builder = StreamsBuilder()
    k_stream = builder.stream("topic-1", consumed=Consumed.with_(S, S, timestamp_extractor=extract_from_key))
    k_stream.map(lambda k, v: (v, v)).join(
        k_stream, lambda v1, v2: f"{v1}:{v2}", JoinWindows.of_time_difference(DAY_MS, grace=3 * DAY_MS),
        stream_joined=Joined.with_(S, S, S)).to("output-topic", Produced.with_(S, S))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic-1", S, S)
        inp.pipe_input("x", "q", 1)     # extracted 880
        inp.pipe_input("a", "x", 2)     # extracted 903; re-keyed to "x"
        assert kvt(driver.create_output_topic("output-topic", S, S).read_records_to_list()) == [
            ("x", "x:q", 903)]


# --------------------------------------------------------------------------------------
# KStreamRepartitionIntegrationTest (records a user sees; partitions via check_copartitioned)
# --------------------------------------------------------------------------------------

def test_deduce_number_of_partitions_from_repartition_operation():
    """KStreamRepartitionIntegrationTest.shouldDeductNumberOfPartitionsFromRepartitionOperation:
    input (4 partitions) repartitioned to 3 joins a re-keyed topic-b (6 partitions): the
    re-keyed side's repartition takes the other side's 3, so the topology runs, and the
    join (10 s) emits topic-b's values."""
    builder = StreamsBuilder()
    topic_b = builder.stream("topic-b", consumed=Consumed.with_(I, S)).map(lambda k, v: (k, v))
    builder.stream("input-topic", consumed=Consumed.with_(I, S)) \
        .repartition(Repartitioned.as_("join-repartition-test").with_num_partitions(3)) \
        .join(topic_b, lambda v1, v2: v2, JoinWindows.of_time_difference(10_000, grace=DAY_MS - 20_000)) \
        .to("output-topic", Produced.with_(I, S))
    topology = builder.build()
    topology.check_copartitioned({"input-topic": 4, "topic-b": 6})
    with driver_for(topology, **INTEGRATION_DEFAULTS) as driver:
        driver.create_input_topic("input-topic", I, S).pipe_key_value_list([(1, "A"), (2, "B")])
        driver.create_input_topic("topic-b", I, S).pipe_key_value_list([(1, "A"), (2, "B")])
        assert driver.create_output_topic("output-topic", I, S).read_key_values_to_list() == [(1, "A"), (2, "B")]


def test_proper_joining_when_repartition_partition_counts_are_valid():
    """KStreamRepartitionIntegrationTest.shouldDoProperJoiningWhenNumberOfPartitionsAreValidWhenUsingRepartitionOperation:
    both sides repartitioned to 4; records without a key pass the repartition but join nothing."""
    builder = StreamsBuilder()
    topic_b = builder.stream("topic-b", consumed=Consumed.with_(I, S)) \
        .repartition(Repartitioned.as_("topic-b-scale-up").with_num_partitions(4))
    builder.stream("input-topic", consumed=Consumed.with_(I, S)) \
        .repartition(Repartitioned.as_("input-topic-scale-up").with_num_partitions(4)) \
        .join(topic_b, lambda v1, v2: v2, JoinWindows.of_time_difference(10_000, grace=DAY_MS - 20_000)) \
        .to("output-topic", Produced.with_(I, S))
    topology = builder.build()
    topology.check_copartitioned({"input-topic": 4, "topic-b": 1})
    records = [(1, "A"), (2, "B"), (None, "C")]
    with driver_for(topology, **INTEGRATION_DEFAULTS) as driver:
        driver.create_input_topic("input-topic", I, S).pipe_key_value_list(records)
        driver.create_input_topic("topic-b", I, S).pipe_key_value_list(records)
        assert driver.create_output_topic("output-topic", I, S).read_key_values_to_list() == [(1, "A"), (2, "B")]


def test_select_key_then_repartition():
    """KStreamRepartitionIntegrationTest.shouldPerformSelectKeyWithRepartitionOperation:
    one repartition topic, and the new keys."""
    builder = StreamsBuilder()
    builder.stream("input-topic", consumed=Consumed.with_(I, S)).select_key(lambda k, v: int(v)) \
        .repartition().to("output-topic", Produced.with_(I, S))
    topology = builder.build()
    assert len(REPARTITION_SINK.findall(topology.describe(APP))) == 1
    with driver_for(topology, **INTEGRATION_DEFAULTS) as driver:
        driver.create_input_topic("input-topic", I, S).pipe_key_value_list([(1, "10"), (2, "20")])
        assert driver.create_output_topic("output-topic", I, S).read_key_values_to_list() == [
            (10, "10"), (20, "20")]


def test_key_select_with_named_repartition_then_count():
    """KStreamRepartitionIntegrationTest.shouldPerformKeySelectOperationWhenRepartitionOperationIsUsedWithKeySelector:
    ``select_key`` named "new-key" (Kafka's Named; streamlib's ``name=``), a repartition of
    the same name with a String key serde, then a count: one repartition topic,
    ``new-key-repartition``, read by one processor downstream of "new-key"."""
    builder = StreamsBuilder()
    builder.stream("input-topic", consumed=Consumed.with_(I, S)) \
        .select_key(lambda k, v: str(k), name="new-key") \
        .repartition(Repartitioned.as_("new-key").with_(S, None, name="new-key")) \
        .group_by_key().count().to_stream().to("output-topic", Produced.with_(S, L))
    topology = builder.build()
    text = topology.describe(APP)
    assert len(re.findall(r"Sink: .*new-key-repartition.*", text)) == 1
    assert len(re.findall(r"<-- new-key\n", text)) == 1
    with driver_for(topology, **INTEGRATION_DEFAULTS) as driver:
        driver.create_input_topic("input-topic", I, S).pipe_key_value_list([(1, "A"), (2, "B")])
        assert driver.create_output_topic("output-topic", S, L).read_key_values_to_list() == [("1", 1), ("2", 1)]


def test_repartition_with_specified_number_of_partitions_then_count():
    """KStreamRepartitionIntegrationTest.shouldCreateRepartitionTopicWithSpecifiedNumberOfPartitions:
    ``new-partitions-repartition`` has 2 partitions whatever the input has (4), and the
    count after it needs no second repartition."""
    builder = StreamsBuilder()
    builder.stream("input-topic", consumed=Consumed.with_(I, S)) \
        .repartition(Repartitioned.as_("new-partitions").with_num_partitions(2)) \
        .group_by_key().count().to_stream().to("output-topic", Produced.with_(I, L))
    topology = builder.build()
    assert topology.nodes["new-partitions-source"].params.num_partitions == 2
    assert len(REPARTITION_SINK.findall(topology.describe(APP))) == 1
    topology.check_copartitioned({"input-topic": 4})
    with driver_for(topology, **INTEGRATION_DEFAULTS) as driver:
        driver.create_input_topic("input-topic", I, S).pipe_key_value_list([(1, "A"), (2, "B")])
        assert driver.create_output_topic("output-topic", I, L).read_key_values_to_list() == [(1, 1), (2, 1)]


def test_repartition_inherits_partition_count_when_not_specified():
    """KStreamRepartitionIntegrationTest.shouldInheritRepartitionTopicPartitionNumberFromUpstreamTopicWhenNumberOfPartitionsIsNotSpecified:
    no fixed count (it follows the input's), same results."""
    builder = StreamsBuilder()
    builder.stream("input-topic", consumed=Consumed.with_(I, S)) \
        .repartition(Repartitioned.as_("new-topic")) \
        .group_by_key().count().to_stream().to("output-topic", Produced.with_(I, L))
    topology = builder.build()
    assert topology.nodes["new-topic-source"].params.num_partitions is None
    with driver_for(topology, **INTEGRATION_DEFAULTS) as driver:
        driver.create_input_topic("input-topic", I, S).pipe_key_value_list([(1, "A"), (2, "B")])
        assert driver.create_output_topic("output-topic", I, L).read_key_values_to_list() == [(1, 1), (2, 1)]


def test_repartition_topic_is_generated_when_name_is_not_specified():
    """KStreamRepartitionIntegrationTest.shouldGenerateRepartitionTopicWhenNameIsNotSpecified."""
    builder = StreamsBuilder()
    builder.stream("input-topic", consumed=Consumed.with_(I, S)).select_key(lambda k, v: str(k)) \
        .repartition(Repartitioned.with_(S, S)).to("output-topic", Produced.with_(S, S))
    topology = builder.build()
    assert len(REPARTITION_SINK.findall(topology.describe(APP))) == 1
    with driver_for(topology, **INTEGRATION_DEFAULTS) as driver:
        driver.create_input_topic("input-topic", I, S).pipe_key_value_list([(1, "A"), (2, "B")])
        assert driver.create_output_topic("output-topic", S, S).read_key_values_to_list() == [
            ("1", "A"), ("2", "B")]


# --------------------------------------------------------------------------------------
# StreamTableJoinTopologyOptimizationIntegrationTest
# --------------------------------------------------------------------------------------

def test_stream_table_join_repartition_named_after_the_key_selector():
    """StreamTableJoinTopologyOptimizationIntegrationTest.shouldDoStreamTableJoinWithDifferentNumberOfPartitions
    (NO_OPTIMIZATION): a stream re-keyed by a step named "selectKey" (Kafka's Named,
    streamlib's ``name=``) joins a table: the join's repartition topic is
    ``<app>-selectKey-repartition``, it adapts to the table's 2 partitions (the stream
    has 4), and the table keeps its changelog ``<app>-store-changelog``.
    (Kafka's test produces its expected records straight into the output topic, so
    it pins no join result.)"""
    builder = StreamsBuilder()
    stream = builder.stream("stream-topic", consumed=Consumed.with_(I, S))
    table = builder.table("table-topic", consumed=Consumed.with_(I, S), materialized=Materialized.as_("store"))
    stream.select_key(lambda k, v: k, name="selectKey").join(table, lambda v1, v2: v2) \
        .to("output-topic", Produced.with_(I, S))
    topology = builder.build()
    text = topology.describe(APP)
    assert f"(topic: {APP}-selectKey-repartition)" in text
    assert f"Changelog: {APP}-store-changelog (store: store)" in text
    topology.check_copartitioned({"stream-topic": 4, "table-topic": 2})


# --------------------------------------------------------------------------------------
# RepartitionOptimizingTest, RepartitionWithMergeOptimizingTest (NO_OPTIMIZATION)
# --------------------------------------------------------------------------------------

def test_repartition_optimizing_results():
    """RepartitionOptimizingTest.shouldSendCorrectResults_NO_OPTIMIZATION: one re-keyed
    stream feeds a processor, a count, an aggregate, a reduce and a stream-stream join
    with the count's stream: four repartition topics, and the final value per key of
    each output. (Kafka's ``process`` step is a ``foreach`` here; its named stores are
    Materialized names; the join uses the default stores.)"""
    collected = []
    builder = StreamsBuilder()
    mapped = builder.stream("input", consumed=Consumed.with_(S, S)).map(lambda k, v: (k.upper(), v))
    mapped.filter(lambda k, v: k == "B").map_values(str.upper).foreach(lambda k, v: collected.append(v))
    count_stream = mapped.group_by_key(Grouped.as_("count-groupByKey")) \
        .count(materialized=Materialized.as_("count-store").with_key_serde(S).with_value_serde(L)) \
        .to_stream()
    count_stream.to("outputTopic_0", Produced.with_(S, L))
    mapped.group_by_key(Grouped.as_("aggregate-groupByKey")) \
        .aggregate(lambda: 0, lambda k, v, agg: agg + len(v),
                   materialized=Materialized.as_("aggregate-store").with_key_serde(S).with_value_serde(I)) \
        .to_stream().to("outputTopic_1", Produced.with_(S, I))
    mapped.filter(lambda k, v: True).peek(lambda k, v: None) \
        .group_by_key(Grouped.as_("reduce-groupByKey")) \
        .reduce(lambda v1, v2: f"{v1}:{v2}", materialized=Materialized.as_("reduce-store")) \
        .to_stream().to("outputTopic_2", Produced.with_(S, S))
    mapped.filter(lambda k, v: k == "A") \
        .join(count_stream, lambda v1, v2: f"{v1}:{v2}", JoinWindows.of_time_difference(5000, grace=DAY_MS - 10_000),
              stream_joined=Joined.with_(S, S, L)) \
        .to("joinedOutputTopic", Produced.with_(S, S))
    topology = builder.build()
    assert len(REPARTITION_SINK.findall(topology.describe(APP))) == 4
    with driver_for(topology) as driver:
        driver.create_input_topic("input", S, S).pipe_key_value_list(
            [(k, v) for k in ("a", "b", "c") for v in ("foo", "bar", "baz")])
        assert collected == ["FOO", "BAR", "BAZ"]
        assert driver.create_output_topic("outputTopic_0", S, L).read_key_values_to_map() == \
            {"A": 3, "B": 3, "C": 3}
        assert driver.create_output_topic("outputTopic_1", S, I).read_key_values_to_map() == \
            {"A": 9, "B": 9, "C": 9}
        assert driver.create_output_topic("outputTopic_2", S, S).read_key_values_to_map() == \
            {"A": "foo:bar:baz", "B": "foo:bar:baz", "C": "foo:bar:baz"}
        assert driver.create_output_topic("joinedOutputTopic", S, S).read_key_values_to_map() == {"A": "baz:3"}


def test_repartition_with_merge_results():
    """RepartitionWithMergeOptimizingTest.shouldSendCorrectResults_NO_OPTIMIZATION: two
    re-keyed streams merged, then counted twice (a Long and a String output): two
    repartition topics, every key counted 6 times."""
    builder = StreamsBuilder()
    mapped_a = builder.stream("inputA", consumed=Consumed.with_(S, S)).map(lambda k, v: (v.split(":")[0], v))
    mapped_b = builder.stream("inputB", consumed=Consumed.with_(S, S)).map(lambda k, v: (v.split(":")[0], v))
    merged = mapped_a.merge(mapped_b)
    merged.group_by_key(Grouped.as_("long-groupByKey")) \
        .count(materialized=Materialized.as_("long-store")) \
        .to_stream().to("outputTopic_0", Produced.with_(S, L))
    merged.group_by_key(Grouped.as_("string-groupByKey")) \
        .count(materialized=Materialized.as_("string-store")) \
        .to_stream().map_values(str).to("outputTopic_1", Produced.with_(S, S))
    topology = builder.build()
    assert len(REPARTITION_SINK.findall(topology.describe(APP))) == 2
    records = [(k, v) for k in ("X", "Y", "Z") for v in ("A:foo", "B:foo", "C:foo")]
    with driver_for(topology) as driver:
        driver.create_input_topic("inputA", S, S).pipe_key_value_list(records)
        driver.create_input_topic("inputB", S, S).pipe_key_value_list(records)
        assert driver.create_output_topic("outputTopic_0", S, L).read_key_values_to_map() == \
            {"A": 6, "B": 6, "C": 6}
        assert driver.create_output_topic("outputTopic_1", S, S).read_key_values_to_map() == \
            {"A": "6", "B": "6", "C": "6"}
