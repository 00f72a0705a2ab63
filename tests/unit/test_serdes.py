"""Serdes: round trips, Kafka-compatible byte layouts, null handling, decode errors."""
from __future__ import annotations

import pickle

import pytest

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
