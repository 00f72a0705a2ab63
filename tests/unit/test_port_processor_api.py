"""Kafka Streams' own tests of the Processor API, ported to streamlib's DSL and driver.

Sources: apache/kafka ``streams/src/test/java/org/apache/kafka/streams/kstream/internals/
KStreamImplTest`` (process / processValues cases), ``.../processor/internals/
ProcessorTopologyTest`` (the parts with stores and timestamps/headers) and
``streams/test-utils/src/test/java/org/apache/kafka/streams/TopologyTestDriverTest``
(punctuation). Each test names the Kafka test it ports. Kafka's tests build their
topologies with ``Topology.addProcessor``; here the same processors run through
``KStream.process``. Kafka's driver lets a test write into a store
(``store.put("a", 21L)``); ours gives read-only views, so those tests pipe the value
first, and say how that changes what they expect.
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from streamlib import (Consumed, FixedKeyProcessor, Processor, ProcessorSupplier, Produced,
                       PunctuationType, Record, Serdes, Stores, StreamsBuilder)

from streams_helpers import APP, I, L, S, driver_for, kvt

INPUT, OUTPUT = "input", "output"


class MockPunctuator:
    """Records the times it was called at (Kafka's ``MockPunctuator``)."""

    def __init__(self):
        self.punctuated_at: list[int] = []

    def __call__(self, timestamp: int) -> None:
        self.punctuated_at.append(timestamp)


def single_processor_topology(interval_ms, punctuation_type, punctuator):
    """TopologyTestDriverTest#setupSingleProcessorTopology: source -> a processor that
    schedules ``punctuator`` and forwards -> sink."""

    class MockProcessor(Processor):
        def init(self, context):
            self.context = context
            context.schedule(interval_ms, punctuation_type, punctuator)

        def process(self, record):
            self.context.forward(record)

    builder = StreamsBuilder()
    builder.stream("source-topic-1").process(MockProcessor, named="processor").to("sink-topic-1")
    return builder


def test_should_punctuate_on_streams_time():
    """TopologyTestDriverTest#shouldPunctuateOnStreamsTime."""
    punctuator = MockPunctuator()
    with driver_for(single_processor_topology(10, PunctuationType.STREAM_TIME, punctuator),
                    default_key_serde=S, default_value_serde=S) as driver:
        topic = driver.create_input_topic("source-topic-1", S, S)
        expected = []
        for timestamp, fires in [(42, True), (42, False), (51, True), (52, False), (61, True), (65, False),
                                 (71, True), (72, False), (95, True), (101, True), (102, False)]:
            topic.pipe_input("key1", "value1", timestamp)
            if fires:
                expected.append(timestamp)
            assert punctuator.punctuated_at == expected, timestamp


def test_should_punctuate_on_wall_clock_time():
    """TopologyTestDriverTest#shouldPunctuateOnWallClockTime."""
    punctuator = MockPunctuator()
    builder = single_processor_topology(10, PunctuationType.WALL_CLOCK_TIME, punctuator)
    with driver_for(builder, default_key_serde=S, default_value_serde=S) as driver:
        expected, clock = [], 0
        for advance, fires in [(5, False), (9, True), (1, False), (20, True), (5, True)]:
            driver.advance_wall_clock_time(advance)
            clock += advance
            if fires:
                expected.append(clock)
            assert punctuator.punctuated_at == expected
        assert expected == [14, 35, 40]


class CustomMaxAggregator(Processor):
    """TopologyTestDriverTest's ``CustomMaxAggregator``: keeps the largest value per key;
    forwards the whole store every minute of wall-clock time and every 10 s of stream time."""

    def init(self, context):
        self.context = context
        context.schedule(timedelta(minutes=1), PunctuationType.WALL_CLOCK_TIME, self.flush_store)
        context.schedule(timedelta(seconds=10), PunctuationType.STREAM_TIME, self.flush_store)
        self.store = context.get_state_store("aggStore")

    def process(self, record):
        old = self.store.get(record.key)
        if old is None or record.value > old:
            self.store.put(record.key, record.value)

    def flush_store(self, timestamp):
        for key, value in self.store.all():
            self.context.forward(Record(key, value, timestamp))


@pytest.fixture
def max_aggregator():
    """TopologyTestDriverTest#setup, with the store filled by piping ``a=21`` at time 0
    (which already punctuates once on stream time: read and checked here)."""
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("aggStore"), S, L))
    builder.stream("input-topic").process(CustomMaxAggregator, "aggStore", named="aggregator").to("result-topic")
    with driver_for(builder, default_key_serde=S, default_value_serde=L) as driver:
        inp = driver.create_input_topic("input-topic", S, L)
        out = driver.create_output_topic("result-topic", S, L)
        inp.pipe_input("a", 21, 0)
        assert out.read_key_values_to_list() == [("a", 21)]
        yield driver, inp, out


def test_should_not_update_store_for_smaller_value(max_aggregator):
    """TopologyTestDriverTest#shouldNotUpdateStoreForSmallerValue (the next stream-time
    punctuation is at 10000, after the pre-filling record's at 0)."""
    driver, inp, out = max_aggregator
    inp.pipe_input("a", 1, 9999)
    assert driver.get_key_value_store("aggStore").get("a") == 21
    assert out.is_empty()
    inp.pipe_input("a", 1, 10000)
    assert out.read_key_values_to_list() == [("a", 21)]


def test_should_update_store_for_larger_value_and_new_key(max_aggregator):
    """TopologyTestDriverTest#shouldNotUpdateStoreForLargerValue and #shouldUpdateStoreForNewKey."""
    driver, inp, out = max_aggregator
    inp.pipe_input("a", 42, 9999)
    inp.pipe_input("b", 21, 10000)
    assert driver.get_key_value_store("aggStore").get("a") == 42
    assert driver.get_key_value_store("aggStore").get("b") == 21
    assert out.read_key_values_to_list() == [("a", 42), ("b", 21)]


def test_should_punctuate_if_even_time_advances(max_aggregator):
    """TopologyTestDriverTest#shouldPunctuateIfEvenTimeAdvances."""
    driver, inp, out = max_aggregator
    inp.pipe_input("a", 1, 9999)
    assert out.is_empty()
    inp.pipe_input("a", 1, 10000)
    assert out.read_key_values_to_list() == [("a", 21)]
    assert out.is_empty()


def test_should_punctuate_if_wall_clock_time_advances(max_aggregator):
    """TopologyTestDriverTest#shouldPunctuateIfWallClockTimeAdvances."""
    driver, inp, out = max_aggregator
    driver.advance_wall_clock_time(timedelta(milliseconds=60000))
    assert out.read_key_values_to_list() == [("a", 21)]
    assert out.is_empty()


# -- ProcessorTopologyTest ----------------------------------------------------------------
class StatefulProcessor(Processor):
    """ProcessorTopologyTest's ``StatefulProcessor``: puts every record in its store."""

    store_name = "connectedStore"

    def init(self, context):
        self.store = context.get_state_store(self.store_name)

    def process(self, record):
        self.store.put(record.key, record.value)


def _pipe_four(driver, topic=INPUT):
    inp = driver.create_input_topic(topic, S, S)
    for key, value in [("key1", "value1"), ("key2", "value2"), ("key3", "value3"), ("key1", "value4")]:
        inp.pipe_input(key, value)


def _assert_four(store):
    assert (store.get("key1"), store.get("key2"), store.get("key3"), store.get("key4")) == \
        ("value4", "value2", "value3", None)


def test_driving_connected_state_store_topology():
    """ProcessorTopologyTest#testDrivingConnectedStateStoreTopology (the store connected by
    the supplier's ``stores()``) and #testDrivingStatefulTopology."""

    class Supplier(ProcessorSupplier):
        def get(self):
            return StatefulProcessor()

        def stores(self):
            return [Stores.key_value_store_builder(Stores.in_memory_key_value_store("connectedStore"), S, S)]

    builder = StreamsBuilder()
    builder.stream(INPUT, consumed=Consumed.with_(S, S)).process(Supplier(), named="processor").to(
        OUTPUT, produced=Produced.with_(I, S))
    with driver_for(builder) as driver:
        _pipe_four(driver)
        assert driver.create_output_topic(OUTPUT, I, S).is_empty()
        _assert_four(driver.get_key_value_store("connectedStore"))


def test_driving_connected_state_store_in_different_processors_topology():
    """ProcessorTopologyTest#testDrivingConnectedStateStoreInDifferentProcessorsTopology:
    one supplier (so one store) for two processors on two topics."""

    class Supplier(ProcessorSupplier):
        def get(self):
            return StatefulProcessor()

        def stores(self):
            return [Stores.key_value_store_builder(Stores.in_memory_key_value_store("connectedStore"), S, S)]

    supplier = Supplier()
    builder = StreamsBuilder()
    first = builder.stream("input-topic-1", consumed=Consumed.with_(S, S)).process(supplier, named="processor1")
    second = builder.stream("input-topic-2", consumed=Consumed.with_(S, S)).process(supplier, named="processor2")
    first.merge(second).to(OUTPUT)
    topology = builder.build()
    assert len(topology.subtopologies) == 1   # the shared store joins them
    with driver_for(topology) as driver:
        _pipe_four(driver, "input-topic-1")
        assert driver.create_output_topic(OUTPUT, I, S).is_empty()
        _assert_four(driver.get_key_value_store("connectedStore"))


@pytest.mark.parametrize("supplier", [Stores.in_memory_key_value_store, Stores.persistent_key_value_store])
@pytest.mark.parametrize("logging", [True, False])
@pytest.mark.parametrize("caching", [True, False])
def test_prefix_scan(supplier, logging, caching):
    """ProcessorTopologyTest#testPrefixScan{InMemory,Persistent}Store{No,With}Caching{No,With}Logging."""
    store = Stores.key_value_store_builder(supplier("connectedStore"), S, S)
    store = store.with_caching_enabled() if caching else store.with_caching_disabled()
    store = store.with_logging_enabled({}) if logging else store.with_logging_disabled()
    builder = StreamsBuilder()
    builder.add_state_store(store)
    builder.stream(INPUT, consumed=Consumed.with_(S, S)).process(StatefulProcessor, "connectedStore").to(OUTPUT)
    with driver_for(builder) as driver:
        _pipe_four(driver)
        results = list(driver.get_key_value_store("connectedStore").prefix_scan("key"))
        assert results == [("key1", "value4"), ("key2", "value2"), ("key3", "value3")]


class ForwardingProcessor(Processor):
    def process(self, record):
        self.context.forward(record)


class TimestampProcessor(Processor):
    def process(self, record):
        self.context.forward(record.with_timestamp(record.timestamp + 10))


def test_should_consider_modified_time_stamps():
    """ProcessorTopologyTest#shouldConsiderModifiedTimeStamps."""
    builder = StreamsBuilder()
    builder.stream(INPUT, consumed=Consumed.with_(S, S)).process(TimestampProcessor, named="processor").to(OUTPUT)
    with driver_for(builder) as driver:
        inp = driver.create_input_topic(INPUT, S, S)
        for i, ts in enumerate((10, 20, 30), 1):
            inp.pipe_input(f"key{i}", f"value{i}", ts)
        assert kvt(driver.create_output_topic(OUTPUT, S, S).read_records_to_list()) == [
            ("key1", "value1", 20), ("key2", "value2", 30), ("key3", "value3", 40)]


def test_should_consider_modified_time_stamps_for_multiple_processors():
    """ProcessorTopologyTest#shouldConsiderModifiedTimeStampsForMultipleProcessors: a
    processor forwards to all children and to each by name."""

    class FanOutTimestampProcessor(Processor):
        def process(self, record):
            self.context.forward(record)
            self.context.forward(record.with_timestamp(record.timestamp + 5), "child1")
            self.context.forward(record, "child2")
            self.context.forward(record.with_timestamp(record.timestamp + 2))

    builder = StreamsBuilder()
    fan_out = builder.stream(INPUT, consumed=Consumed.with_(S, S)).process(FanOutTimestampProcessor,
                                                                          named="processor")
    fan_out.process(ForwardingProcessor, named="child1").to("output-topic-1")
    fan_out.process(TimestampProcessor, named="child2").to("output-topic-2")
    with driver_for(builder) as driver:
        inp = driver.create_input_topic(INPUT, S, S)
        out1 = driver.create_output_topic("output-topic-1", S, S)
        out2 = driver.create_output_topic("output-topic-2", S, S)
        inp.pipe_input("key1", "value1", 10)
        assert kvt(out1.read_records_to_list()) == [("key1", "value1", t) for t in (10, 15, 12)]
        assert kvt(out2.read_records_to_list()) == [("key1", "value1", t) for t in (20, 20, 22)]
        inp.pipe_input("key2", "value2", 20)
        assert kvt(out1.read_records_to_list()) == [("key2", "value2", t) for t in (20, 25, 22)]
        assert kvt(out2.read_records_to_list()) == [("key2", "value2", t) for t in (30, 30, 32)]


def test_should_add_headers():
    """ProcessorTopologyTest#shouldAddHeaders."""

    class AddHeaderProcessor(Processor):
        def process(self, record):
            self.context.forward(record.with_headers({**dict(record.headers), "key": b"value"}))

    builder = StreamsBuilder()
    builder.stream(INPUT, consumed=Consumed.with_(S, S)).process(AddHeaderProcessor).to(OUTPUT)
    with driver_for(builder) as driver:
        driver.create_input_topic(INPUT, S, S).pipe_input("key1", "value1", 10)
        record = driver.create_output_topic(OUTPUT, S, S).read_record()
        assert (record.key, record.value, record.timestamp, record.headers) == ("key1", "value1", 10,
                                                                              {"key": b"value"})


def test_unknown_child_name_is_an_error():
    """ProcessorContextImpl#forward's "Unknown downstream node" (Kafka's StreamsException)."""

    class ToNowhere(Processor):
        def process(self, record):
            self.context.forward(record, "nowhere")

    builder = StreamsBuilder()
    builder.stream(INPUT, consumed=Consumed.with_(S, S)).process(ToNowhere, named="p").to(OUTPUT)
    with driver_for(builder) as driver, pytest.raises(Exception, match="unknown child 'nowhere'"):
        driver.create_input_topic(INPUT, S, S).pipe_input("k", "v", 1)


# -- KStreamImplTest ----------------------------------------------------------------------
PIPED = [("A", "0", 5), ("B", "00", 100), ("C", "000", 0), ("D", "0000", 0), ("A", "00000", 10),
         ("A", "000000", 8)]
LENGTHS = [("A", 1, 5), ("B", 2, 100), ("C", 3, 0), ("D", 4, 0), ("A", 5, 10), ("A", 6, 8)]


class SumLengths(Processor):
    """KStreamImplTest's processor of shouldProcessWithOldProcessorAndState."""

    def init(self, context):
        self.sum_store = context.get_state_store("sum")

    def process(self, record):
        counter = self.sum_store.get(record.key)
        if counter is None:
            self.sum_store.put_if_absent(record.key, len(record.value))
        elif record.value is None:
            self.sum_store.delete(record.key)
        else:
            self.sum_store.put(record.key, counter + len(record.value))


def _pipe_lengths(driver):
    inp = driver.create_input_topic(INPUT, S, S)
    for key, value, ts in PIPED:
        inp.pipe_input(key, value, ts)


def _check_sums(driver):
    store = driver.get_key_value_store("sum")
    assert [store.get(k) for k in "ABCD"] == [12, 2, 3, 4]


SUM_DESCRIPTION = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
    "      --> p\n"
    "      <-- none\n"
    "    Processor: p (stores: [sum])\n"
    "      --> none\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    f"    Changelog: {APP}-sum-changelog (store: sum)\n")


def test_should_process_with_processor_and_state():
    """KStreamImplTest#shouldProcessWithOldProcessorAndState (streamlib's describe() adds
    the changelog line, and, as for every step, ``<-- none`` / ``--> none`` lines to
    sources and sinks)."""
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("sum"), S, I))
    builder.stream(INPUT, consumed=Consumed.with_(S, S)).process(SumLengths, "sum", named="p")
    topology = builder.build()
    assert topology.describe(APP) == SUM_DESCRIPTION
    with driver_for(topology) as driver:
        _pipe_lengths(driver)
        _check_sums(driver)


def test_should_bind_state_with_processor_supplier():
    """KStreamImplTest#shouldBindStateWithOldProcessorSupplier: the supplier's ``stores()``."""

    class Supplier(ProcessorSupplier):
        def get(self):
            return SumLengths()

        def stores(self):
            return [Stores.key_value_store_builder(Stores.in_memory_key_value_store("sum"), S, I)]

    builder = StreamsBuilder()
    builder.stream(INPUT, consumed=Consumed.with_(S, S)).process(Supplier(), named="p")
    topology = builder.build()
    assert topology.describe(APP) == SUM_DESCRIPTION
    with driver_for(topology) as driver:
        _pipe_lengths(driver)
        _check_sums(driver)


def _describe_with_sink(name):
    return ("Topologies:\n"
            "   Sub-topology: 0\n"
            "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
            f"      --> {name}\n"
            "      <-- none\n"
            f"    Processor: {name} (stores: [])\n"
            "      --> KSTREAM-SINK-0000000001\n"
            "      <-- KSTREAM-SOURCE-0000000000\n"
            "    Sink: KSTREAM-SINK-0000000001 (topic: output)\n"
            "      --> none\n"
            f"      <-- {name}\n")


def test_should_bind_state_with_processor():
    """KStreamImplTest#shouldBindStateWithOldProcessor: a function as the supplier."""

    class Length(Processor):
        def process(self, record):
            self.context.forward(record.with_value(len(record.value)))

    builder = StreamsBuilder()
    (builder.stream(INPUT, consumed=Consumed.with_(S, S)).process(lambda: Length(), named="p")
     .to(OUTPUT, produced=Produced.with_(value_serde=I)))
    topology = builder.build()
    assert topology.describe(APP) == _describe_with_sink("p")
    with driver_for(topology) as driver:
        _pipe_lengths(driver)
        assert kvt(driver.create_output_topic(OUTPUT, S, I).read_records_to_list()) == LENGTHS


def test_should_process_values():
    """KStreamImplTest#shouldProcessValues."""

    class Length(FixedKeyProcessor):
        def process(self, record):
            self.context.forward(record.with_value(len(record.value)))

    builder = StreamsBuilder()
    (builder.stream(INPUT, consumed=Consumed.with_(S, S)).process_values(Length, named="fkp")
     .to(OUTPUT, produced=Produced.with_(value_serde=I)))
    topology = builder.build()
    assert topology.describe(APP) == _describe_with_sink("fkp")
    with driver_for(topology) as driver:
        _pipe_lengths(driver)
        assert kvt(driver.create_output_topic(OUTPUT, S, I).read_records_to_list()) == LENGTHS


@pytest.mark.parametrize("method", ["process", "process_values"])
@pytest.mark.parametrize("stores", [(), ("storeName",)])
def test_should_not_allow_null_processor_supplier(method, stores):
    """KStreamImplTest#shouldNotAllowNullProcessSupplierOnProcess[Values][WithStores]."""
    stream = StreamsBuilder().stream(INPUT)
    with pytest.raises(TypeError, match="processor_supplier can't be null"):
        getattr(stream, method)(None, *stores)


@pytest.mark.parametrize("method", ["process", "process_values"])
def test_should_not_allow_null_store_name(method):
    """KStreamImplTest#shouldNotAllowNullStoreNameOnProcess[Values]."""
    stream = StreamsBuilder().stream(INPUT)
    with pytest.raises(TypeError, match="store names must be strings"):
        getattr(stream, method)(ForwardingProcessor, None)
