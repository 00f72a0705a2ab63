"""Kafka's own tests of serdes, bad input and record timestamps, ported to streamlib.

Sources (apache/kafka):
- ``clients/src/test/java/org/apache/kafka/common/serialization/SerializationTest.java``
  and the serializers it exercises (``LongSerializer``/``LongDeserializer``,
  ``IntegerSerializer``/``IntegerDeserializer``, ``DoubleSerializer``/``DoubleDeserializer``,
  ``StringSerializer``/``StringDeserializer``, ``ByteArrayDeserializer``);
- ``streams/src/test/java/org/apache/kafka/streams/processor/internals/RecordDeserializerTest.java``
  and ``RecordQueueTest.java`` (with ``RecordDeserializer``, ``RecordQueue.updateHead``,
  ``CorruptedRecord``, ``PartitionGroup``);
- ``streams/src/test/java/org/apache/kafka/streams/processor/FailOnInvalidTimestampTest.java``
  and ``LogAndSkipOnInvalidTimestampTest.java``.

Mapping of Kafka's names onto streamlib's (API.md):
- ``LogAndFailExceptionHandler`` -> ``deserialization_exception_handler="fail"`` (the default),
  ``LogAndContinueExceptionHandler`` -> ``"log_and_continue"``;
- the task-level ``dropped-records-total`` metric -> ``metrics()["dropped_records"]``;
  ``records-consumed-total`` -> ``metrics()["records_in"]``; a queue's partition time /
  the task's stream time -> ``metrics()["stream_time"]`` (``RecordQueue.UNKNOWN`` = -1);
- the default ``FailOnInvalidTimestamp`` extractor -> a source without
  ``timestamp_extractor``; a ``TimestampExtractor`` -> ``timestamp_extractor(key, value,
  record_timestamp)``; ``LogAndSkipOnInvalidTimestamp`` (returns the record's own invalid
  timestamp, which ``RecordQueue`` then drops) -> an extractor returning the record's
  timestamp as it is;
- ``StreamsException`` with a ``SerializationException`` cause -> ``DeserializationFailure``
  (a ``ProcessingError``) whose ``__cause__`` is a ``SerializationError``.

Where the Kafka tests drive a ``RecordQueue``/``RecordDeserializer`` directly, the port pipes
records through a ``TopologyTestDriver`` (source -> sink) and observes what reaches the sink.
Expectations the unit tests leave implicit (the dropped-records metric, which records reach
the topology, stream time after a dropped record) were checked against Kafka Streams 4.3.1's
own ``TopologyTestDriver`` (jars in ``.cache/oracle/4.3.1/libs``).
"""
from __future__ import annotations

import math
import struct

import pytest

from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder, StreamsConfig, TopologyTestDriver
from streamlib.processors import DeserializationFailure, ProcessingError
from streamlib.serdes import SerializationError

S, I, L, D, B = Serdes.string(), Serdes.integer(), Serdes.long(), Serdes.double(), Serdes.bytes()

#: RecordQueueTest's payloads: key IntegerSerializer(1), value IntegerSerializer(10), and the
#: undecodable one, LongSerializer(1) (8 bytes where IntegerDeserializer needs 4).
INT_KEY, INT_VALUE = b"\x00\x00\x00\x01", b"\x00\x00\x00\x0a"
LONG_ONE = b"\x00\x00\x00\x00\x00\x00\x00\x01"


def _passthrough(key_serde, value_serde, extractor=None, stateful=False):
    """source -> sink; ``stateful`` adds a count of the source stream beside the sink (a
    store in the same sub-topology), which changes nothing Kafka's queue does."""
    builder = StreamsBuilder()
    stream = builder.stream("topic", consumed=Consumed.with_(key_serde, value_serde,
                                                             timestamp_extractor=extractor))
    stream.to("out", produced=Produced.with_(key_serde, value_serde))
    if stateful:
        stream.group_by_key().count(Materialized.as_("counts"))
    return builder.build()


def _driver(topology, handler=None):
    kwargs = {} if handler is None else {"deserialization_exception_handler": handler}
    return TopologyTestDriver(topology, StreamsConfig(application_id="app", **kwargs))


def _out(driver, key_serde=B, value_serde=B):
    return [(r.key, r.value, r.timestamp)
            for r in driver.create_output_topic("out", key_serde, value_serde).read_records_to_list()]


# ---------------------------------------------------------------------------------------
# SerializationTest
# ---------------------------------------------------------------------------------------

#: SerializationTest's testData, restricted to the types API.md has serdes for.
KAFKA_TEST_DATA = [
    ("String", S, [None, "my string"]),
    ("Integer", I, [None, 423412424, -41243432]),
    ("Long", L, [None, 922337203685477580, -922337203685477581]),
    ("Double", D, [None, 5678567.12312, -5678567.12341]),
    ("byte[]", B, [None, b"my string"]),
]


@pytest.mark.parametrize("name,serde,values", KAFKA_TEST_DATA, ids=[t[0] for t in KAFKA_TEST_DATA])
def test_all_serdes_should_roundtrip_input(name, serde, values):
    """SerializationTest.allSerdesShouldRoundtripInput (and allSerdesShouldSupportNull for the
    null entry of each list): every value, null included, survives serialize -> deserialize."""
    for value in values:
        serialized = serde.serialize(value)
        assert serde.deserialize(serialized) == value, f"Should get the original {name}"
        if value is None:
            assert serialized is None


#: The bytes Kafka's serializers give for SerializationTest's values (Kafka 4.3.1's
#: IntegerSerializer, LongSerializer, DoubleSerializer, StringSerializer: big-endian,
#: Double via Double.doubleToLongBits, String in UTF-8).
KAFKA_BYTES = [
    (I, 423412424, "193cc2c8"),
    (I, -41243432, "fd8aacd8"),
    (L, 922337203685477580, "0ccccccccccccccc"),
    (L, -922337203685477581, "f333333333333333"),
    (L, -(1 << 63), "8000000000000000"),
    (L, (1 << 63) - 1, "7fffffffffffffff"),
    (D, 5678567.12312, "4155a979c7e132b5"),
    (D, -5678567.12341, "c155a979c7e5f30e"),
    (S, "my string", "6d7920737472696e67"),
    (B, b"my string", "6d7920737472696e67"),
]


@pytest.mark.parametrize("serde,value,hex_bytes", KAFKA_BYTES)
def test_kafka_serializers_byte_format_of_the_test_values(serde, value, hex_bytes):
    """SerializationTest.allSerdesShouldRoundtripInput's values, in the byte format of Kafka's
    serializers (LongSerializer/IntegerSerializer/DoubleSerializer write big-endian two's
    complement / IEEE 754 bits; the deserializers read them back, sign included)."""
    assert serde.serialize(value).hex() == hex_bytes
    assert serde.deserialize(bytes.fromhex(hex_bytes)) == value


@pytest.mark.parametrize("serde,size", [(L, 8), (I, 4), (D, 8)], ids=["Long", "Integer", "Double"])
@pytest.mark.parametrize("case", ["zero_bytes", "too_few_bytes", "too_many_bytes"])
def test_fixed_size_deserializers_throw_serialization_exception_on_wrong_length(serde, size, case):
    """SerializationTest.floatDeserializerShouldThrowSerializationExceptionOnZeroBytes /
    OnTooFewBytes / OnTooManyBytes, applied to the fixed-size deserializers API.md has:
    LongDeserializer, IntegerDeserializer and DoubleDeserializer throw SerializationException
    ("Size of data received by ... is not 8/4") for any other length, an empty array included."""
    length = {"zero_bytes": 0, "too_few_bytes": size - 1, "too_many_bytes": size + 1}[case]
    with pytest.raises(SerializationError):
        serde.deserialize(bytes(length))


def test_empty_payloads_are_values_not_nulls():
    """RecordDeserializerTest.shouldReturnConsumerRecordWithDeserializedValueWhenNoExceptions
    feeds empty key and value arrays (``new byte[0]``), which are payloads, not nulls:
    StringSerializer/StringDeserializer map "" <-> an empty array, ByteArrayDeserializer returns
    the empty array itself, and only ``null`` is null (allSerdesShouldSupportNull)."""
    assert S.serialize("") == b""
    assert S.deserialize(b"") == ""
    assert B.serialize(b"") == b""
    assert B.deserialize(b"") == b""


def test_double_serializer_writes_the_canonical_nan():
    """SerializationTest.floatSerdeShouldPreserveNaNValues has no Double counterpart because
    Kafka's DoubleSerializer, unlike FloatSerializer (floatToRawIntBits), writes
    Double.doubleToLongBits: every NaN, whatever its payload bits, is written as the canonical
    0x7ff8000000000000 (checked with Kafka 4.3.1). DoubleDeserializer still reads any NaN."""
    assert D.serialize(float("nan")).hex() == "7ff8000000000000"
    odd_nan = D.deserialize(bytes.fromhex("7ff0000000000001"))
    assert math.isnan(odd_nan)
    assert D.serialize(odd_nan).hex() == "7ff8000000000000"


# ---------------------------------------------------------------------------------------
# RecordDeserializerTest
# ---------------------------------------------------------------------------------------

def test_deserialized_record_keeps_timestamp_and_headers():
    """RecordDeserializerTest.shouldReturnConsumerRecordWithDeserializedValueWhenNoExceptions:
    the deserialized record carries the key and value the serdes return and keeps the raw
    record's timestamp (10) and headers ({"key": "value"}) on its way through the topology."""
    driver = _driver(_passthrough(S, S))
    driver.create_input_topic("topic", S, S).pipe_input("key", "value", 10, headers={"key": b"value"})
    [record] = driver.create_output_topic("out", S, S).read_records_to_list()
    assert (record.key, record.value, record.timestamp) == ("key", "value", 10)
    assert record.headers == {"key": b"value"}


#: RecordDeserializerTest's (keyThrowsException, valueThrowsException) cases.
THROWS = [(True, True), (True, False), (False, True)]


def _bad_pair(key_throws, value_throws):
    return (LONG_ONE if key_throws else INT_KEY), (LONG_ONE if value_throws else INT_VALUE)


@pytest.mark.parametrize("key_throws,value_throws", THROWS)
def test_fail_handler_throws_when_key_or_value_deserialization_fails(key_throws, value_throws):
    """RecordDeserializerTest.shouldThrowStreamsExceptionWhenDeserializationFailsAndException
    HandlerRepliesWithFail and RecordQueueTest.shouldThrowStreamsExceptionWhenKeyDeserialization
    Fails / ...WhenValueDeserializationFails: a key (or value, or both) that IntegerDeserializer
    cannot read (LongSerializer's 8 bytes) under LogAndFail stops processing with an error that
    names the handler setting, caused by the serde's SerializationException; the record before
    it was processed, nothing after it."""
    driver = _driver(_passthrough(I, I), "fail")
    inp = driver.create_input_topic("topic", B, B)
    inp.pipe_input(INT_KEY, INT_VALUE, 0)
    with pytest.raises(DeserializationFailure, match="deserialization_exception_handler") as info:
        inp.pipe_input(*_bad_pair(key_throws, value_throws), 0)
    assert isinstance(info.value.__cause__, SerializationError)
    assert _out(driver, I, I) == [(1, 10, 0)]


@pytest.mark.parametrize("key_throws,value_throws", THROWS)
def test_continue_handler_skips_the_record_when_key_or_value_deserialization_fails(key_throws, value_throws):
    """RecordDeserializerTest.shouldNotThrowStreamsExceptionWhenDeserializationFailsAndException
    HandlerRepliesWithContinue and RecordQueueTest.shouldNotThrowStreamsExceptionWhenKey/Value
    DeserializationFailsWithSkipHandler: under LogAndContinue the record is skipped (the
    deserializer returns null, the queue keeps only a CorruptedRecord for the offset commit),
    nothing is thrown, and the records around it are processed."""
    driver = _driver(_passthrough(I, I), "log_and_continue")
    inp = driver.create_input_topic("topic", B, B)
    inp.pipe_input(INT_KEY, INT_VALUE, 5)
    inp.pipe_input(*_bad_pair(key_throws, value_throws), 6)
    inp.pipe_input(INT_KEY, INT_VALUE, 7)
    assert _out(driver, I, I) == [(1, 10, 5), (1, 10, 7)]


@pytest.mark.parametrize("handler", ["log_and_continue", "dead_letter"])
@pytest.mark.parametrize("key_throws,value_throws", THROWS)
def test_continue_handler_records_one_dropped_record(key_throws, value_throws, handler):
    """RecordDeserializer.handleDeserializationFailure (RecordDeserializerTest's CONTINUE case):
    after the handler says CONTINUE, Kafka records the task's dropped-records sensor, once per
    skipped record even when both key and value fail (Kafka 4.3.1: dropped-records-total = 1.0
    after good, bad, good). The same with a dead-letter queue (Kafka 4.3.1 with
    errors.dead.letter.queue.topic.name set: dropped-records-total = 1.0), streamlib's
    ``dead_letter``."""
    driver = _driver(_passthrough(I, I), handler)
    inp = driver.create_input_topic("topic", B, B)
    inp.pipe_input(INT_KEY, INT_VALUE, 5)
    inp.pipe_input(*_bad_pair(key_throws, value_throws), 6)
    inp.pipe_input(INT_KEY, INT_VALUE, 7)
    assert driver.metrics()["dropped_records"] == 1


# ---------------------------------------------------------------------------------------
# RecordQueueTest
# ---------------------------------------------------------------------------------------

def test_consumed_records_are_counted():
    """RecordQueueTest.testConsumedSensor: three records polled from the queue count three in
    records-consumed-total (streamlib: records_in)."""
    driver = _driver(_passthrough(I, I))
    inp = driver.create_input_topic("topic", B, B)
    for _ in range(3):
        inp.pipe_input(INT_KEY, INT_VALUE, 0)
    assert driver.metrics()["records_in"] == 3


@pytest.mark.parametrize("stateful", [False, True], ids=["stateless", "stateful"])
def test_time_tracking_processes_in_offset_order_and_tracks_the_max_timestamp(stateful):
    """RecordQueueTest.testTimeTracking and shouldTrackPartitionTimeAsMaxProcessedTimestamp:
    records are taken in offset order whatever their extracted timestamps (2, 1, 3, 4, then
    4, 1, 2), each keeps its extracted timestamp, and the partition time is the largest
    timestamp processed so far: UNKNOWN (-1) before any, then 2, 2, 3, 4 ... never going back.
    (Kafka's MockTimestampExtractor returns the offset; here the extractor returns the value.)
    Kafka tracks this time in the task's queues (RecordQueue, PartitionGroup), whether or not
    the task has state stores, so both variants expect the same."""
    driver = _driver(_passthrough(I, L, extractor=lambda key, value, ts: value, stateful=stateful))
    inp = driver.create_input_topic("topic", I, L)
    assert driver.metrics()["stream_time"] == -1
    stream_times = []
    for ts in [2, 1, 3, 4, 1, 2]:
        inp.pipe_input(1, ts, 0)
        stream_times.append(driver.metrics()["stream_time"])
    assert stream_times == [2, 2, 3, 4, 4, 4]
    assert [(v, t) for _, v, t in _out(driver, I, L)] == [(2, 2), (1, 1), (3, 3), (4, 4), (1, 1), (2, 2)]


@pytest.mark.parametrize("handler", ["log_and_continue", "dead_letter"])
def test_should_throw_on_negative_timestamp_whatever_the_deserialization_handler(handler):
    """RecordQueueTest.shouldThrowOnNegativeTimestamp and FailOnInvalidTimestampTest.
    failOnInvalidTimestamp: with the default FailOnInvalidTimestamp extractor a record whose
    own timestamp is negative fails the task ("... has invalid (negative) timestamp ... Use a
    different TimestampExtractor ..."), even though the deserialization handler is
    LogAndContinue: the timestamp extractor is not a deserialization step and RecordQueue
    rethrows its StreamsException. Kafka 4.3.1's driver: the record at 5 is processed, the one
    at -3 throws (dropped-records stays 0). ``dead_letter`` is streamlib's other CONTINUE-like
    handler; Kafka routes no extractor failure to any deserialization handler."""
    driver = _driver(_passthrough(S, S), handler)
    inp = driver.create_input_topic("topic", S, S)
    inp.pipe_input("a", "1", 5)
    with pytest.raises(ProcessingError, match="invalid .*timestamp"):
        inp.pipe_input("b", "2", -3)
    assert _out(driver, S, S) == [("a", "1", 5)]


def test_should_drop_on_negative_timestamp_with_log_and_skip_extractor():
    """RecordQueueTest.shouldDropOnNegativeTimestamp and LogAndSkipOnInvalidTimestampTest.
    logAndSkipOnInvalidTimestamp: an extractor that hands back the record's invalid timestamp
    as it is (-1) makes RecordQueue drop the record and record dropped-records; nothing is
    thrown, even with the LogAndFail deserialization handler, and later records are processed
    (Kafka 4.3.1: outputs at 5 and 7, dropped-records-total = 1.0)."""
    driver = _driver(_passthrough(S, S, extractor=lambda key, value, ts: ts), "fail")
    inp = driver.create_input_topic("topic", S, S)
    inp.pipe_input("a", "1", 5)
    inp.pipe_input("b", "2", -1)
    inp.pipe_input("c", "3", 7)
    assert _out(driver, S, S) == [("a", "1", 5), ("c", "3", 7)]
    assert driver.metrics()["dropped_records"] == 1


def test_custom_extractor_may_replace_a_negative_record_timestamp():
    """RecordQueue.updateHead / TimestampExtractor contract: the extractor sees every
    deserialized record, an invalid record timestamp included, and only the timestamp it
    returns is checked; returning a valid one (100) keeps the record, with that timestamp
    (Kafka 4.3.1: outputs at 5, 100, 7; nothing dropped)."""
    driver = _driver(_passthrough(S, S, extractor=lambda key, value, ts: 100 if ts < 0 else ts))
    inp = driver.create_input_topic("topic", S, S)
    for key, ts in [("a", 5), ("b", -3), ("c", 7)]:
        inp.pipe_input(key, key, ts)
    assert _out(driver, S, S) == [("a", "a", 5), ("b", "b", 100), ("c", "c", 7)]
    assert driver.metrics()["dropped_records"] == 0


def test_deserialization_is_handled_before_the_timestamp_is_checked():
    """RecordQueue.updateHead: a record is deserialized first and only then given to the
    timestamp extractor; a record that cannot be deserialized goes to the deserialization
    handler, so under LogAndContinue it is skipped even if its timestamp is negative
    (FailOnInvalidTimestamp never sees it). Kafka 4.3.1: no exception, only the later good
    record comes out."""
    driver = _driver(_passthrough(S, I), "log_and_continue")
    inp = driver.create_input_topic("topic", B, B)
    inp.pipe_input(b"s", LONG_ONE, -3)
    inp.pipe_input(b"s", INT_VALUE, 7)
    assert _out(driver, S, I) == [("s", 10, 7)]


@pytest.mark.parametrize("handler", ["fail", "log_and_continue"])
def test_extractor_that_throws_fails_whatever_the_deserialization_handler(handler):
    """RecordQueue.updateHead: an exception from a user TimestampExtractor is fatal
    ("Fatal user code error in TimestampExtractor callback ..."), with the user's exception as
    the cause, whatever the deserialization handler (Kafka 4.3.1, LogAndContinue: throws)."""
    def extractor(key, value, ts):
        raise RuntimeError("boom")

    driver = _driver(_passthrough(S, S, extractor=extractor), handler)
    with pytest.raises(ProcessingError, match="boom") as info:
        driver.create_input_topic("topic", S, S).pipe_input("a", "1", 5)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert _out(driver, S, S) == []


def test_skipped_and_dropped_records_do_not_advance_stream_time():
    """CorruptedRecord / RecordQueue.updateHead / PartitionGroup.nextRecord: a record skipped by
    LogAndContinue is polled as a CorruptedRecord stamped NO_TIMESTAMP, and a record whose
    extracted timestamp is negative never reaches the head, so neither moves partition or
    stream time; the next good record does. (A task with a store: the stateless case is
    test_time_tracking_processes_in_offset_order_and_tracks_the_max_timestamp[stateless].)"""
    extractor = lambda key, value, ts: -1 if value == 99 else ts  # noqa: E731
    driver = _driver(_passthrough(I, I, extractor=extractor, stateful=True), "log_and_continue")
    inp = driver.create_input_topic("topic", B, B)
    inp.pipe_input(INT_KEY, INT_VALUE, 5)
    inp.pipe_input(INT_KEY, LONG_ONE, 100)                       # cannot be deserialized
    assert driver.metrics()["stream_time"] == 5
    inp.pipe_input(INT_KEY, struct.pack(">i", 99), 200)          # extractor says -1
    assert driver.metrics()["stream_time"] == 5
    inp.pipe_input(INT_KEY, INT_VALUE, 7)
    assert driver.metrics()["stream_time"] == 7
    assert _out(driver, I, I) == [(1, 10, 5), (1, 10, 7)]
