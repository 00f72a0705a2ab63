"""Kafka Streams' own tests of its TopologyTestDriver, ported to streamlib's driver.

Sources: apache/kafka ``streams/test-utils/src/test/java/org/apache/kafka/streams/``
``TestTopicsTest`` and ``TopologyTestDriverTest`` (semantics from ``TopologyTestDriver``,
``TestInputTopic``, ``TestOutputTopic``, ``TestRecord``). Each test names the Kafka test
method it ports. Processor-API topologies are rewritten with the DSL where the
observable behaviour survives the rewrite. Expectations that the Kafka tests do not
spell out for a DSL topology (record order across re-enqueued topics, headers through
operators, the internal topics a DSL topology writes) were checked against Kafka
Streams 4.3.1's ``TopologyTestDriver`` (the jars in ``.cache/oracle``).

Kafka's ``NoSuchElementException`` is matched as Python's ``LookupError`` (the base of
``IndexError`` and ``KeyError``).
"""
from __future__ import annotations

import pytest

from streamlib import (Consumed, Materialized, Produced, Repartitioned, Serdes, StreamsBuilder,
                       StreamsConfig, Suppressed, TimeWindows, TopologyTestDriver)
from streamlib.processors import DeserializationFailure
from streamlib.serdes import SerializationError

from streams_helpers import APP, I, L, S, config, driver_for, kvt

B = Serdes.bytes()
D = Serdes.double()

# TestTopicsTest's topology and topic names.
INPUT_TOPIC = "input"
OUTPUT_TOPIC = "output1"
INPUT_TOPIC_MAP = OUTPUT_TOPIC
OUTPUT_TOPIC_MAP = "output2"
#: Instant.parse("2019-06-01T10:00:00Z").toEpochMilli()
TEST_BASE_TIME = 1559383200000

# TopologyTestDriverTest's topic names.
SOURCE_TOPIC_1 = "source-topic-1"
SOURCE_TOPIC_2 = "source-topic-2"
SINK_TOPIC_1 = "sink-topic-1"
SINK_TOPIC_2 = "sink-topic-2"


def _records(records):
    """(key, value, timestamp, headers) of output records."""
    return [(r.key, r.value, r.timestamp, r.headers) for r in records]


@pytest.fixture
def topics_driver():
    """TestTopicsTest#setup: ``input`` -> ``output1`` with the default (bytes) serdes, and
    ``output1`` (long, string) -> swap key and value -> ``output2`` (string, long)."""
    builder = StreamsBuilder()
    builder.stream(INPUT_TOPIC).to(OUTPUT_TOPIC)
    source = builder.stream(INPUT_TOPIC_MAP, consumed=Consumed.with_(L, S))
    source.map(lambda k, v: (v, k)).to(OUTPUT_TOPIC_MAP, produced=Produced.with_(S, L))
    driver = TopologyTestDriver(builder.build(), config(default_key_serde=B, default_value_serde=B))
    try:
        yield driver
    finally:
        driver.close()


# ---------------------------------------------------------------------------------------
# TestTopicsTest
# ---------------------------------------------------------------------------------------

def test_value(topics_driver):
    """TestTopicsTest#testValue: a value piped without key or timestamp comes out alone."""
    inp = topics_driver.create_input_topic(INPUT_TOPIC, S, S)
    out = topics_driver.create_output_topic(OUTPUT_TOPIC, S, S)
    inp.pipe_input(None, "Hello")
    assert out.read_key_value()[1] == "Hello"
    assert out.is_empty()


def test_value_list(topics_driver):
    """TestTopicsTest#testValueList (``pipeValueList`` as key-less pairs)."""
    inp = topics_driver.create_input_topic(INPUT_TOPIC, S, S)
    out = topics_driver.create_output_topic(OUTPUT_TOPIC, S, S)
    words = ["This", "is", "an", "example"]
    inp.pipe_key_value_list([(None, w) for w in words])
    assert [v for _, v in out.read_key_values_to_list()] == words


def test_key_value(topics_driver):
    """TestTopicsTest#testKeyValue."""
    inp = topics_driver.create_input_topic(INPUT_TOPIC, L, S)
    out = topics_driver.create_output_topic(OUTPUT_TOPIC, L, S)
    inp.pipe_input(1, "Hello")
    assert out.read_key_value() == (1, "Hello")
    assert out.is_empty()


def test_key_value_list(topics_driver):
    """TestTopicsTest#testKeyValueList: the mapping sub-topology swaps key and value."""
    inp = topics_driver.create_input_topic(INPUT_TOPIC_MAP, L, S)
    out = topics_driver.create_output_topic(OUTPUT_TOPIC_MAP, S, L)
    words = ["This", "is", "an", "example"]
    inp.pipe_key_value_list(list(enumerate(words)))
    assert out.read_key_values_to_list() == [(w, i) for i, w in enumerate(words)]


def test_timestamp(topics_driver):
    """TestTopicsTest#testTimestamp: explicit timestamps (ms) are kept; no headers."""
    inp = topics_driver.create_input_topic(INPUT_TOPIC, L, S)
    out = topics_driver.create_output_topic(OUTPUT_TOPIC, L, S)
    inp.pipe_input(None, "Hello", 3)
    assert _records(out.read_records_to_list()) == [(None, "Hello", 3, {})]
    inp.pipe_input(2, "Kafka", 4)
    assert _records(out.read_records_to_list()) == [(2, "Kafka", 4, {})]
    inp.pipe_input(2, "Kafka", TEST_BASE_TIME)
    assert _records(out.read_records_to_list()) == [(2, "Kafka", TEST_BASE_TIME, {})]
    # pipeValueList(list, recordInstant, advance): one record every 15 s from a day later.
    day, advance = 86_400_000, 15_000
    for i, word in enumerate(["Advancing", "time"]):
        inp.pipe_input(None, word, TEST_BASE_TIME + day + i * advance)
    assert _records(out.read_records_to_list()) == [
        (None, "Advancing", TEST_BASE_TIME + day, {}),
        (None, "time", TEST_BASE_TIME + day + advance, {})]


def test_with_headers(topics_driver):
    """TestTopicsTest#testWithHeaders: headers (one with a null value, one with an odd
    name) reach the output unchanged, with or without an explicit timestamp."""
    headers = {"foo": b"value", "bar": None, '"A\\u00ea\\u00f1\\u00fcC"': b"value"}
    inp = topics_driver.create_input_topic(INPUT_TOPIC, L, S)
    out = topics_driver.create_output_topic(OUTPUT_TOPIC, L, S)
    inp.pipe_input(1, "Hello", headers=headers)
    rec = out.read_records_to_list()[0]
    assert (rec.key, rec.value, rec.headers) == (1, "Hello", headers)
    inp.pipe_input(2, "Kafka", 4, headers=headers)
    assert _records(out.read_records_to_list()) == [(2, "Kafka", 4, headers)]


def test_multiple_topics(topics_driver):
    """TestTopicsTest#testMultipleTopics: a record the topology writes to ``output1`` is
    both readable there and processed by the sub-topology reading ``output1``; a record
    piped straight into ``output1`` is not readable as output of ``output1``."""
    in1 = topics_driver.create_input_topic(INPUT_TOPIC, L, S)
    in2 = topics_driver.create_input_topic(INPUT_TOPIC_MAP, L, S)
    out1 = topics_driver.create_output_topic(OUTPUT_TOPIC, L, S)
    out2 = topics_driver.create_output_topic(OUTPUT_TOPIC_MAP, S, L)
    in1.pipe_input(1, "Hello")
    assert out1.read_key_value() == (1, "Hello")
    assert out2.read_key_value() == ("Hello", 1)
    assert out1.is_empty() and out2.is_empty()
    in2.pipe_input(1, "Hello")
    assert out2.read_key_value() == ("Hello", 1)
    assert out1.is_empty() and out2.is_empty()


def test_non_existing_output_topic(topics_driver):
    """TestTopicsTest#testNonExistingOutputTopic: reading a topic nobody writes raises."""
    out = topics_driver.create_output_topic("no-exist", L, S)
    with pytest.raises(LookupError):
        out.read_key_value()


def test_non_used_output_topic(topics_driver):
    """TestTopicsTest#testNonUsedOutputTopic: reading a sink topic not yet written raises."""
    out = topics_driver.create_output_topic(OUTPUT_TOPIC, L, S)
    with pytest.raises(LookupError):
        out.read_key_value()


def test_empty_topic(topics_driver):
    """TestTopicsTest#testEmptyTopic: reading past the last record raises (the list readers
    return an empty list)."""
    inp = topics_driver.create_input_topic(INPUT_TOPIC, S, S)
    out = topics_driver.create_output_topic(OUTPUT_TOPIC, S, S)
    inp.pipe_input(None, "Hello")
    assert out.read_key_value()[1] == "Hello"
    with pytest.raises(LookupError):
        out.read_key_value()
    assert out.read_records_to_list() == [] and out.read_key_values_to_list() == []


def test_non_existing_input_topic(topics_driver):
    """TestTopicsTest#testNonExistingInputTopic: piping into a topic the topology does not
    read fails (Kafka fails in ``pipeInput``; streamlib already in ``create_input_topic``)."""
    with pytest.raises(Exception, match="no-exist"):
        topics_driver.create_input_topic("no-exist", L, S).pipe_input(1, "Hello")


def test_wrong_serde(topics_driver):
    """TestTopicsTest#testWrongSerde: a string key piped into a topic read with a long key
    serde fails processing (default handler: fail)."""
    inp = topics_driver.create_input_topic(INPUT_TOPIC_MAP, S, S)
    with pytest.raises(DeserializationFailure):
        inp.pipe_input("1L", "Hello")


def test_output_wrong_serde(topics_driver):
    """TestTopicsTest#testOutputWrongSerde: reading a string key with a long serde raises."""
    inp = topics_driver.create_input_topic(INPUT_TOPIC_MAP, L, S)
    out = topics_driver.create_output_topic(OUTPUT_TOPIC_MAP, L, S)
    inp.pipe_input(1, "Hello")
    with pytest.raises(SerializationError):
        out.read_key_value()


# ---------------------------------------------------------------------------------------
# TopologyTestDriverTest
# ---------------------------------------------------------------------------------------

HEADERS = {"key": b"value"}
KEY1 = b""
VALUE1 = b""
TIMESTAMP1 = 42
KEY2 = b""
VALUE2 = b""
TIMESTAMP2 = 43


def _source_sink(consumed=Consumed.with_(B, B), produced=Produced.with_(B, B)):
    builder = StreamsBuilder()
    builder.stream(SOURCE_TOPIC_1, consumed=consumed).to(SINK_TOPIC_1, produced=produced)
    return builder.build()


def test_should_not_require_parameters():
    """TopologyTestDriverTest#shouldNotRequireParameters: no config, no wall-clock time."""
    driver = TopologyTestDriver(_source_sink())
    try:
        driver.create_input_topic(SOURCE_TOPIC_1, B, B).pipe_input(b"k", b"v", 1)
        assert driver.create_output_topic(SINK_TOPIC_1, B, B).read_key_value() == (b"k", b"v")
    finally:
        driver.close()


def test_should_throw_for_unknown_topic():
    """TopologyTestDriverTest#shouldThrowForUnknownTopic: an empty topology reads nothing."""
    driver = TopologyTestDriver(StreamsBuilder().build(), config())
    try:
        with pytest.raises(Exception, match="unknownTopic"):
            driver.create_input_topic("unknownTopic", B, B).pipe_input(None, None, 0)
    finally:
        driver.close()


def test_should_throw_no_such_element_for_unused_output_topic_with_dynamic_routing():
    """TopologyTestDriverTest#shouldThrowNoSuchElementExceptionForUnusedOutputTopicWithDynamicRouting."""
    with driver_for(_source_sink()) as driver:
        out = driver.create_output_topic("unused-topic", S, S)
        assert out.is_empty()
        with pytest.raises(LookupError):
            out.read_key_value()


def test_should_process_record_for_topic():
    """TopologyTestDriverTest#shouldProcessRecordForTopic: empty (not null) key and value
    bytes, headers and timestamp pass through to the sink."""
    with driver_for(_source_sink()) as driver:
        driver.create_input_topic(SOURCE_TOPIC_1, B, B).pipe_input(KEY1, VALUE1, TIMESTAMP1, headers=HEADERS)
        out = driver.create_output_topic(SINK_TOPIC_1, B, B).read_records_to_list()
    assert _records(out) == [(KEY1, VALUE1, TIMESTAMP1, HEADERS)]


def test_should_send_record_via_correct_source_topic():
    """TopologyTestDriverTest#shouldSendRecordViaCorrectSourceTopic: a record is processed
    only by the source of its topic, with its own timestamp and headers."""
    seen = {SOURCE_TOPIC_1: [], SOURCE_TOPIC_2: []}
    builder = StreamsBuilder()
    s1 = builder.stream(SOURCE_TOPIC_1, consumed=Consumed.with_(B, B)) \
        .peek(lambda k, v: seen[SOURCE_TOPIC_1].append((k, v)))
    s2 = builder.stream(SOURCE_TOPIC_2, consumed=Consumed.with_(B, B)) \
        .peek(lambda k, v: seen[SOURCE_TOPIC_2].append((k, v)))
    s1.merge(s2).to(SINK_TOPIC_1, produced=Produced.with_(B, B))
    with driver_for(builder) as driver:
        in1 = driver.create_input_topic(SOURCE_TOPIC_1, B, B)
        in2 = driver.create_input_topic(SOURCE_TOPIC_2, B, B)
        out = driver.create_output_topic(SINK_TOPIC_1, B, B)
        in1.pipe_input(KEY1, VALUE1, TIMESTAMP1, headers=HEADERS)
        assert (len(seen[SOURCE_TOPIC_1]), len(seen[SOURCE_TOPIC_2])) == (1, 0)
        assert _records(out.read_records_to_list()) == [(KEY1, VALUE1, TIMESTAMP1, HEADERS)]
        in2.pipe_input(KEY2, VALUE2, TIMESTAMP2)
        assert (len(seen[SOURCE_TOPIC_1]), len(seen[SOURCE_TOPIC_2])) == (1, 1)
        assert _records(out.read_records_to_list()) == [(KEY2, VALUE2, TIMESTAMP2, {})]


def test_records_are_processed_in_piping_order_not_timestamp_order():
    """TopologyTestDriverTest#shouldSendRecordViaCorrectSourceTopic, extended: every
    pipeInput is processed to the end before it returns, so records from several topics
    come out in piping order whatever their timestamps (checked with Kafka 4.3.1)."""
    builder = StreamsBuilder()
    builder.stream(SOURCE_TOPIC_1, consumed=Consumed.with_(S, S)) \
        .merge(builder.stream(SOURCE_TOPIC_2, consumed=Consumed.with_(S, S))).to(SINK_TOPIC_1)
    with driver_for(builder) as driver:
        in1 = driver.create_input_topic(SOURCE_TOPIC_1, S, S)
        in2 = driver.create_input_topic(SOURCE_TOPIC_2, S, S)
        in1.pipe_input("a", "1", 100)
        in2.pipe_input("b", "2", 50)
        in1.pipe_input("c", "3", 10)
        out = driver.create_output_topic(SINK_TOPIC_1, S, S).read_records_to_list()
    assert kvt(out) == [("a", "1", 100), ("b", "2", 50), ("c", "3", 10)]


def test_should_use_source_specific_deserializers():
    """TopologyTestDriverTest#shouldUseSourceSpecificDeserializers: two sources with their
    own serdes write one sink topic, each with matching serdes."""
    builder = StreamsBuilder()
    builder.stream(SOURCE_TOPIC_1, consumed=Consumed.with_(L, S)).to(SINK_TOPIC_1, produced=Produced.with_(L, S))
    builder.stream(SOURCE_TOPIC_2, consumed=Consumed.with_(I, D)).to(SINK_TOPIC_1, produced=Produced.with_(I, D))
    with driver_for(builder) as driver:
        driver.create_input_topic(SOURCE_TOPIC_1, L, S).pipe_input(42, "anyString")
        assert driver.create_output_topic(SINK_TOPIC_1, L, S).read_key_value() == (42, "anyString")
        driver.create_input_topic(SOURCE_TOPIC_2, I, D).pipe_input(73, 3.14)
        assert driver.create_output_topic(SINK_TOPIC_1, I, D).read_key_value() == (73, 3.14)


def test_should_use_sink_specific_serializers():
    """TopologyTestDriverTest#shouldUseSinkSpecificSerializers."""
    builder = StreamsBuilder()
    builder.stream(SOURCE_TOPIC_1, consumed=Consumed.with_(L, S)).to(SINK_TOPIC_1, produced=Produced.with_(L, S))
    builder.stream(SOURCE_TOPIC_2, consumed=Consumed.with_(I, D)).to(SINK_TOPIC_2, produced=Produced.with_(I, D))
    with driver_for(builder) as driver:
        driver.create_input_topic(SOURCE_TOPIC_1, L, S).pipe_input(42, "anyString")
        assert driver.create_output_topic(SINK_TOPIC_1, L, S).read_key_value() == (42, "anyString")
        driver.create_input_topic(SOURCE_TOPIC_2, I, D).pipe_input(73, 3.14)
        assert driver.create_output_topic(SINK_TOPIC_2, I, D).read_key_value() == (73, 3.14)
        assert driver.create_output_topic(SINK_TOPIC_1, L, S).is_empty()


def test_should_forward_records_from_subtopology_to_subtopology():
    """TopologyTestDriverTest#shouldForwardRecordsFromSubtopologyToSubtopology: a sink
    topic that another sub-topology reads is readable and processed; empty key and value,
    headers and timestamp survive both hops."""
    builder = StreamsBuilder()
    builder.stream(SOURCE_TOPIC_1, consumed=Consumed.with_(B, B)).to(SINK_TOPIC_1, produced=Produced.with_(B, B))
    builder.stream(SINK_TOPIC_1, consumed=Consumed.with_(B, B)).to(SINK_TOPIC_2, produced=Produced.with_(B, B))
    with driver_for(builder) as driver:
        driver.create_input_topic(SOURCE_TOPIC_1, B, B).pipe_input(KEY1, VALUE1, TIMESTAMP1, headers=HEADERS)
        assert _records(driver.create_output_topic(SINK_TOPIC_1, B, B).read_records_to_list()) == \
            [(KEY1, VALUE1, TIMESTAMP1, HEADERS)]
        assert _records(driver.create_output_topic(SINK_TOPIC_2, B, B).read_records_to_list()) == \
            [(KEY1, VALUE1, TIMESTAMP1, HEADERS)]


# Not ported: the changelog half of TopologyTestDriverTest#shouldCaptureInternalTopicNamesIfWrittenInto.
# streamlib's driver keeps its stores without changelog topics (a driver run restores
# nothing); Kafka's captures the changelog records too.


def test_should_capture_internal_repartition_topic_if_written_into():
    """TopologyTestDriverTest#shouldCaptureInternalTopicNamesIfWrittenInto (repartition
    part): the repartition topic of ``select_key().group_by_key().count(Materialized.as_
    ("table1"))`` is named ``<application id>-table1-repartition`` (Kafka names it after
    the store) and what the driver wrote to it is readable, headers included."""
    builder = StreamsBuilder()
    builder.stream(SOURCE_TOPIC_1, consumed=Consumed.with_(S, S)).select_key(lambda k, v: v) \
        .group_by_key().count(materialized=Materialized.as_("table1"))
    topology = builder.build()
    assert "table1-repartition" in topology.describe()
    with driver_for(topology) as driver:
        driver.create_input_topic(SOURCE_TOPIC_1, S, S).pipe_input("k", "v", TIMESTAMP1, headers=HEADERS)
        rep = driver.create_output_topic(f"{APP}-table1-repartition", S, S).read_records_to_list()
    assert _records(rep) == [("v", "v", TIMESTAMP1, HEADERS)]


def test_should_capture_named_repartition_topic_if_written_into():
    """TopologyTestDriverTest#shouldCaptureInternalTopicNamesIfWrittenInto, with an
    explicitly named ``repartition()`` so that only the capture is under test:
    ``<application id>-rep-repartition`` is readable."""
    builder = StreamsBuilder()
    builder.stream(SOURCE_TOPIC_1, consumed=Consumed.with_(S, S)).select_key(lambda k, v: v) \
        .repartition(Repartitioned.as_("rep")).to(SINK_TOPIC_1)
    with driver_for(builder) as driver:
        driver.create_input_topic(SOURCE_TOPIC_1, S, S).pipe_input("k", "v", TIMESTAMP1)
        assert kvt(driver.create_output_topic(SINK_TOPIC_1, S, S).read_records_to_list()) == [("v", "v", TIMESTAMP1)]
        rep = driver.create_output_topic(f"{APP}-rep-repartition", S, S).read_records_to_list()
    assert kvt(rep) == [("v", "v", TIMESTAMP1)]


def test_should_capture_global_topic_if_written_into():
    """TopologyTestDriverTest#shouldCaptureGlobalTopicNameIfWrittenInto: a stream written to
    a global table's topic is readable there and updates the global store."""
    builder = StreamsBuilder()
    builder.global_table(SOURCE_TOPIC_1, consumed=Consumed.with_(S, S), materialized=Materialized.as_("globalTable"))
    builder.stream(SOURCE_TOPIC_2, consumed=Consumed.with_(S, S)).to(SOURCE_TOPIC_1)
    with driver_for(builder) as driver:
        driver.create_input_topic(SOURCE_TOPIC_2, S, S).pipe_input("k", "v", TIMESTAMP1)
        assert kvt(driver.create_output_topic(SOURCE_TOPIC_1, S, S).read_records_to_list()) == [("k", "v", TIMESTAMP1)]
        assert driver.get_key_value_store("globalTable").get("k") == "v"


def test_should_feed_store_from_global_ktable():
    """TopologyTestDriverTest#shouldFeedStoreFromGlobalKTable: a store obtained before the
    record was piped sees it (the view is live, not a snapshot)."""
    builder = StreamsBuilder()
    builder.global_table("topic", consumed=Consumed.with_(S, S), materialized=Materialized.as_("globalStore"))
    with driver_for(builder) as driver:
        store = driver.get_key_value_store("globalStore")
        assert store is not None and store.get("k1") is None
        driver.create_input_topic("topic", S, S).pipe_input("k1", "value1")
        assert store.get("k1") == "value1"
        assert driver.get_key_value_store("globalStore").get("k1") == "value1"


def test_should_clean_up_persistent_state_stores_on_close(tmp_path):
    """TopologyTestDriverTest#shouldCleanUpPersistentStateStoresOnClose: two drivers on the
    same application id and ``state_dir``; the second starts with an empty store."""
    builder = StreamsBuilder()
    builder.table("input-topic", consumed=Consumed.with_(S, L), materialized=Materialized.as_("storeProcessorStore"))
    topology = builder.build()
    cfg = StreamsConfig(application_id="test-TopologyTestDriver-cleanup", state_dir=str(tmp_path))
    with TopologyTestDriver(topology, cfg) as driver:
        assert driver.get_key_value_store("storeProcessorStore").get("a") is None
        driver.create_input_topic("input-topic", S, L).pipe_input("a", 1)
        assert driver.get_key_value_store("storeProcessorStore").get("a") == 1
    with TopologyTestDriver(topology, cfg) as driver:
        assert driver.get_key_value_store("storeProcessorStore").get("a") is None


def _recursive(builder):
    """A stream on ``input`` that writes ``recurse-<value>`` back to ``input`` (once) and
    echoes every record to ``output`` (the recursion is defined first)."""
    stream = builder.stream("input", consumed=Consumed.with_(S, S))
    stream.filter_not(lambda k, v: v.startswith("recurse-")).map_values(lambda v: "recurse-" + v).to("input")
    stream.to("output")
    return stream


def test_should_enqueue_later_outputs_after_earlier_ones():
    """TopologyTestDriverTest#shouldEnqueueLaterOutputsAfterEarlierOnes: a record written
    back to a source topic is processed after the record that wrote it has finished, so
    the output first echoes the input, then the recursed record."""
    builder = StreamsBuilder()
    _recursive(builder)
    with driver_for(builder) as driver:
        driver.create_input_topic("input", S, S).pipe_input("B", "beta")
        events = driver.create_output_topic("output", S, S).read_key_values_to_list()
    assert events == [("B", "beta"), ("B", "recurse-beta")]


def test_should_enqueue_later_outputs_after_earlier_ones_across_repartitions():
    """TopologyTestDriverTest#shouldEnqueueLaterOutputsAfterEarlierOnes with repartition
    topics: both records a ``flat_map`` writes to the first repartition topic are processed
    before what they write to the second one (Kafka 4.3.1's driver gives exactly this
    order: records are queued per topic and picked by timestamp, never depth first)."""
    builder = StreamsBuilder()
    level1 = builder.stream("in", consumed=Consumed.with_(S, S)) \
        .flat_map(lambda k, v: [(v + "1", v), (v + "2", v)]).repartition()
    level1.to("out")
    level1.map_values(lambda v: v + "-deep").repartition().to("out")
    with driver_for(builder) as driver:
        driver.create_input_topic("in", S, S).pipe_input("k", "x", 1)
        out = driver.create_output_topic("out", S, S).read_key_values_to_list()
    assert out == [("x1", "x"), ("x2", "x"), ("x1", "x-deep"), ("x2", "x-deep")]


def test_should_apply_global_updates_correctly_in_recursive_topologies():
    """TopologyTestDriverTest#shouldApplyGlobalUpdatesCorrectlyInRecursiveTopologies: the
    global store ends with the last update, and the global topic holds both in order."""
    builder = StreamsBuilder()
    builder.global_table("global-topic", consumed=Consumed.with_(S, S), materialized=Materialized.as_("global-store"))
    _recursive(builder).to("global-topic")
    with driver_for(builder) as driver:
        driver.create_input_topic("input", S, S).pipe_input("A", "alpha")
        store = driver.get_key_value_store("global-store")
        assert store is not None
        assert store.get("A") == "recurse-alpha"
        events = driver.create_output_topic("global-topic", S, S).read_key_values_to_list()
    assert events == [("A", "alpha"), ("A", "recurse-alpha")]


def test_wall_clock_time_does_not_close_windows_in_the_dsl():
    """TopologyTestDriverTest#shouldPunctuateOnWallClockTime, for the DSL: no DSL operator
    punctuates on wall-clock time in Kafka's driver (it disables the emit intervals), so
    advancing the wall clock emits nothing from a suppressed windowed count; stream time
    closes the window (checked with Kafka 4.3.1)."""
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key() \
        .windowed_by(TimeWindows.of(10, grace=0)).count(materialized=Materialized.as_("w")) \
        .suppress(Suppressed.until_window_closes()).to_stream() \
        .map(lambda k, v: (f"{k.key}@{k.window.start}", v)).to("out", produced=Produced.with_(S, L))
    with TopologyTestDriver(builder.build(), config(), initial_wall_clock_time=0) as driver:
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", S, L)
        inp.pipe_input("a", "x", 1)
        driver.advance_wall_clock_time(86_400_000)
        assert out.read_key_values_to_list() == []
        inp.pipe_input("b", "x", 10)
        assert out.read_key_values_to_list() == [("a@0", 1)]


def test_headers_survive_repartitions_and_aggregations():
    """TestTopicsTest#testWithHeaders through DSL operators: Kafka forwards the headers of
    the record being processed, so they reach the output of a repartition and of a count
    (the update it triggered), a null-valued header included (checked with Kafka 4.3.1)."""
    headers = {"foo": b"value", "bar": None}
    builder = StreamsBuilder()
    stream = builder.stream(SOURCE_TOPIC_1, consumed=Consumed.with_(S, S))
    stream.select_key(lambda k, v: v).group_by_key().count(materialized=Materialized.as_("table1")) \
        .to_stream().to("counts", produced=Produced.with_(S, L))
    stream.select_key(lambda k, v: v).repartition().to("rep-out")
    with driver_for(builder) as driver:
        driver.create_input_topic(SOURCE_TOPIC_1, S, S).pipe_input("k", "v", 5, headers=headers)
        assert _records(driver.create_output_topic("counts", S, L).read_records_to_list()) == \
            [("v", 1, 5, headers)]
        assert _records(driver.create_output_topic("rep-out", S, S).read_records_to_list()) == \
            [("v", "v", 5, headers)]


def test_table_source_drops_null_keys_and_forwards_tombstones():
    """TopologyTestDriver#metrics (no dedicated Kafka test): a table source drops a record
    with a null key and counts it in dropped records; a null value is a tombstone that is
    forwarded (checked with Kafka 4.3.1: dropped-records-total = 1)."""
    builder = StreamsBuilder()
    builder.table("t", consumed=Consumed.with_(S, S), materialized=Materialized.as_("tstore")) \
        .to_stream().to("tout")
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("t", S, S)
        inp.pipe_input(None, "x", 1)
        inp.pipe_input("k", "y", 2)
        inp.pipe_input("k", None, 3)
        assert kvt(driver.create_output_topic("tout", S, S).read_records_to_list()) == \
            [("k", "y", 2), ("k", None, 3)]
        assert driver.metrics()["dropped_records"] == 1
        assert driver.get_key_value_store("tstore").get("k") is None


def test_driver_runs_one_partition_whatever_num_partitions():
    """TopologyTestDriver (PARTITION_ID = 0, one task for every sub-topology): a configured
    partition count does not split the keys; every update is emitted and queryable."""
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).select_key(lambda k, v: v).group_by_key() \
        .count(materialized=Materialized.as_("counts")).to_stream().to("out", produced=Produced.with_(S, L))
    with driver_for(builder, num_partitions=4) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list(
            [("1", "a"), ("2", "b"), ("3", "a"), ("4", "c"), ("5", "b"), ("6", "a")])
        assert driver.create_output_topic("out", S, L).read_key_values_to_list() == \
            [("a", 1), ("b", 1), ("a", 2), ("c", 1), ("b", 2), ("a", 3)]
        store = driver.get_key_value_store("counts")
        assert list(store.all()) == [("a", 3), ("b", 2), ("c", 1)]
