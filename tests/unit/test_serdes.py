"""Serdes: round trips, Kafka-compatible byte layouts, null handling, decode errors."""
from __future__ import annotations

import json as _json
import pickle
import re

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlib import Serdes
from streamlib.serdes import SerializationError, serde_by_name

AVRO_SCHEMA = {"type": "record", "name": "User",
               "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}


@pytest.mark.parametrize("serde, value", [
    (Serdes.string(), "héllo wörld"), (Serdes.long(), -(2 ** 63)), (Serdes.long(), 2 ** 63 - 1),
    (Serdes.integer(), -7), (Serdes.double(), 3.25), (Serdes.bytes(), b"\x00\xff"),
    (Serdes.json(), {"a": [1, 2, {"b": None}]}), (Serdes.avro(AVRO_SCHEMA), {"name": "ann", "age": 7}),
])
def test_round_trip_and_null(serde, value):
    assert serde.deserialize(serde.serialize(value)) == value
    assert serde.serialize(None) is None and serde.deserialize(None) is None


def test_byte_layouts_match_kafka_serializers():
    assert Serdes.long().serialize(1) == b"\x00" * 7 + b"\x01"
    assert Serdes.integer().serialize(-1) == b"\xff\xff\xff\xff"
    assert Serdes.double().serialize(1.0) == b"\x3f\xf0" + b"\x00" * 6
    assert Serdes.string().serialize("é") == "é".encode("utf-8")
    assert Serdes.json().serialize({"a": 1}) == b'{"a":1}'


@pytest.mark.parametrize("serde, payload, fragment", [
    (Serdes.long(), b"abc", "long() cannot deserialize 3 bytes [61 62 63]"),
    (Serdes.integer(), b"\x01", "integer() cannot deserialize 1 bytes [01]"),
    (Serdes.string(), b"\xff\xfe", "string() cannot deserialize 2 bytes [ff fe]"),
    (Serdes.json(), b"{not json", "json() cannot deserialize 9 bytes"),
    (Serdes.avro(AVRO_SCHEMA), b"\x06ann\x0e\x00", "avro(User) cannot deserialize"),
])
def test_decode_errors_name_the_serde_and_show_the_bytes(serde, payload, fragment):
    with pytest.raises(SerializationError, match=fragment.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        serde.deserialize(payload)


def test_serialize_errors_name_the_serde():
    with pytest.raises(SerializationError, match=r"serde string\(\) cannot serialize int"):
        Serdes.string().serialize(5)


@pytest.mark.parametrize("serde, value", [(Serdes.long(), 5), (Serdes.integer(), 5),
                                          (Serdes.double(), 5.5), (Serdes.string(), "x")])
def test_serdes_pickle_for_spark_executors(serde, value):
    from pyspark import cloudpickle

    clone = pickle.loads(cloudpickle.dumps(serde))
    assert clone.deserialize(serde.serialize(value)) == value


def test_serde_by_name_for_the_cli():
    assert serde_by_name("long") == Serdes.long()
    with pytest.raises(ValueError, match="unknown serde 'nope'"):
        serde_by_name("nope")


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6)
_JSON_BYTES = st.one_of(
    _JSON_VALUES.map(lambda v: Serdes.json().serialize(v)),                    # as json() writes them
    _JSON_VALUES.map(lambda v: _json.dumps(v, ensure_ascii=False).encode()),   # spaces, raw UTF-8
    st.binary(max_size=6), st.just(b"null"), st.none())


@settings(deadline=None)
@given(st.lists(_JSON_BYTES, max_size=8))
def test_json_check_batch_vouches_exactly_for_values_that_round_trip(values):
    """``json().check_batch`` is True exactly when every value deserializes and
    serializes back to the same bytes (what a batch path relies on)."""
    serde = Serdes.json()

    def round_trips(data):
        try:
            return serde.serialize(serde.deserialize(data)) == data
        except Exception:
            return False

    expected = all(data is None or round_trips(data) for data in values)
    assert serde.check_batch(pa.array(values, pa.binary())) is expected


@settings(deadline=None)
@given(st.lists(_JSON_BYTES, max_size=8))
def test_json_column_decoding_is_value_by_value_decoding(values):
    """``json().deserialize_column`` gives what ``deserialize`` gives value by value, or
    raises what the first bad value raises (the column path only takes payloads that are
    one JSON value without spaces around it, and hands anything else to the values)."""
    serde = Serdes.json()
    column = pa.array(values, pa.binary())
    try:
        expected = [serde.deserialize(v) for v in values]
    except SerializationError as error:
        with pytest.raises(SerializationError, match=re.escape(str(error))):
            serde.deserialize_column(column)
        return
    assert repr(serde.deserialize_column(column)) == repr(expected)


@pytest.mark.parametrize("payload", [b' {"a":1}', b'{"a":1} ', b'\xef\xbb\xbf{"a":1}', b'1 2', b'[1', b'"\\ud800"',
                                     b'NaN', b'{"a":1,"a":2}', b'1e400', b'{"a":[1,{"b":null}]}'])
def test_json_column_decoding_of_odd_payloads(payload):
    """Spaces, a byte-order mark, two values, half a value, a lone surrogate, NaN,
    repeated keys, a float overflow: what value-by-value decoding gives (or raises)."""
    serde = Serdes.json()
    column = pa.array([b"1", payload], pa.binary())
    try:
        expected = [1, serde.deserialize(payload)]
    except SerializationError:
        with pytest.raises(SerializationError):
            serde.deserialize_column(column)
        return
    assert repr(serde.deserialize_column(column)) == repr(expected)
