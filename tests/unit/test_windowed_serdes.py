"""Windowed serdes in Kafka's wire format, ported from Kafka Streams' WindowedSerdesTest,
TimeWindowedSerializerTest/TimeWindowedDeserializerTest and SessionWindowedSerializerTest/
SessionWindowedDeserializerTest (streams/src/test/java/org/apache/kafka/streams/kstream/).
Byte layouts are Kafka's WindowKeySchema.toBinary / SessionKeySchema.toBinary."""
import pickle
from datetime import timedelta

import pytest

from streamlib import Serdes, Window, Windowed
from streamlib.serdes import SerializationError
from streamlib.serdes import SessionWindowedSerde, TimeWindowedSerde

LONG_MAX = (1 << 63) - 1


def be8(n: int) -> bytes:
    return n.to_bytes(8, "big", signed=True)


def test_time_windowed_serde_wraps_the_inner_serde():
    """WindowedSerdesTest.shouldWrapForTimeWindowedSerde / TimeWindowedSerializerTest.
    testTimeWindowedSerializerConstructor / TimeWindowedDeserializerTest.testTimeWindowedDeserializerConstructor"""
    serde = Serdes.time_windowed(Serdes.string(), 5_000_000)
    assert isinstance(serde, TimeWindowedSerde)
    assert serde.inner == Serdes.string()
    assert serde.window_size_ms == 5_000_000
    assert Serdes.time_windowed(Serdes.string(), timedelta(minutes=1)).window_size_ms == 60_000


def test_session_windowed_serde_wraps_the_inner_serde():
    """WindowedSerdesTest.shouldWrapForSessionWindowedSerde / SessionWindowedSerializerTest.
    testSessionWindowedSerializerConstructor / SessionWindowedDeserializerTest.testSessionWindowedDeserializerConstructor"""
    serde = Serdes.session_windowed(Serdes.string())
    assert isinstance(serde, SessionWindowedSerde)
    assert serde.inner == Serdes.string()


def test_time_windowed_serde_round_trip():
    """WindowedSerdesTest.testTimeWindowSerdeFrom: Windowed(10, TimeWindow(0, Long.MAX_VALUE)) with
    window size Long.MAX_VALUE survives a round trip."""
    windowed = Windowed(10, Window(0, LONG_MAX))
    serde = Serdes.time_windowed(Serdes.integer(), LONG_MAX)
    assert serde.deserialize(serde.serialize(windowed)) == windowed


def test_session_windowed_serde_round_trip():
    """WindowedSerdesTest.testSessionWindowedSerdeFrom: Windowed(10, SessionWindow(0, 1))."""
    windowed = Windowed(10, Window(0, 1))
    serde = Serdes.session_windowed(Serdes.integer())
    assert serde.deserialize(serde.serialize(windowed)) == windowed


def test_time_windowed_byte_layout_is_kafkas():
    """WindowKeySchema.toBinary: inner key bytes + 8-byte big-endian window start; the end is
    start + window size on the way back (WindowKeySchema.from)."""
    serde = Serdes.time_windowed(Serdes.string(), 10)
    assert serde.serialize(Windowed("a", Window(10, 20))) == b"a" + be8(10)
    assert serde.deserialize(b"a" + be8(10)) == Windowed("a", Window(10, 20))
    assert serde.serialize(Windowed("héllo", Window(1_700_000_000_000, 1_700_000_000_010))) == \
        "héllo".encode() + b"\x00\x00\x01\x8b\xcf\xe5\x68\x00"
    long_keys = Serdes.time_windowed(Serdes.long(), 60_000)
    assert long_keys.serialize(Windowed(7, Window(60_000, 120_000))) == be8(7) + be8(60_000)


def test_time_windowed_end_is_capped_at_long_max():
    """WindowKeySchema.timeWindowForSize: a window end past Long.MAX_VALUE is truncated to it."""
    serde = Serdes.time_windowed(Serdes.string(), LONG_MAX)
    assert serde.deserialize(b"k" + be8(5)) == Windowed("k", Window(5, LONG_MAX))


def test_session_windowed_byte_layout_is_kafkas():
    """SessionKeySchema.toBinary: inner key bytes + 8-byte end + 8-byte start, big-endian."""
    serde = Serdes.session_windowed(Serdes.string())
    data = serde.serialize(Windowed("a", Window(10, 25)))
    assert data == b"a" + be8(25) + be8(10)
    assert serde.deserialize(data) == Windowed("a", Window(10, 25))
    assert serde.deserialize(b"" + be8(3) + be8(3)) == Windowed("", Window(3, 3))


def test_windowed_serdes_pass_none_through():
    """Kafka's (de)serializers map null to null (tombstones of windowed tables)."""
    for serde in (Serdes.time_windowed(Serdes.string(), 10), Serdes.session_windowed(Serdes.string())):
        assert serde.serialize(None) is None and serde.deserialize(None) is None


def test_windowed_serdes_reject_bad_input_with_clear_errors():
    """WindowedSerdesTest's misuse cases, Python-style: a non-Windowed value or a payload too
    short for the window bytes is a SerializationError naming the serde."""
    time_serde = Serdes.time_windowed(Serdes.string(), 10)
    session_serde = Serdes.session_windowed(Serdes.string())
    with pytest.raises(SerializationError, match="time_windowed"):
        time_serde.serialize("a")
    with pytest.raises(SerializationError, match="at least 8 bytes"):
        time_serde.deserialize(b"abc")
    with pytest.raises(SerializationError, match="at least 16 bytes"):
        session_serde.deserialize(be8(1))
    with pytest.raises(SerializationError, match="session_windowed"):
        session_serde.serialize(Windowed(None, Window(0, 1)))


def test_windowed_serdes_compare_and_pickle():
    """Serdes are compared with == (topology checks) and pickled to Spark executors."""
    a = Serdes.time_windowed(Serdes.string(), 10)
    assert a == Serdes.time_windowed(Serdes.string(), 10)
    assert a != Serdes.time_windowed(Serdes.string(), 11)
    assert a != Serdes.time_windowed(Serdes.long(), 10)
    assert a != Serdes.session_windowed(Serdes.string())
    assert Serdes.session_windowed(Serdes.string()) == Serdes.session_windowed(Serdes.string())
    assert repr(a) == "Serdes.time_windowed(Serdes.string(), 10)"
    for serde in (a, Serdes.session_windowed(Serdes.string())):
        copy = pickle.loads(pickle.dumps(serde))
        assert copy == serde
        value = Windowed("x", Window(10, 20))
        assert copy.deserialize(serde.serialize(value)) == value
