"""Serdes over whole Arrow columns: the same results and the same errors as value by value."""
from __future__ import annotations

import pickle
import re

import pyarrow as pa
import pytest
from pyspark import cloudpickle

from streamlib import Serdes
from streamlib.serdes import SerializationError

AVRO_SCHEMA = {"type": "record", "name": "User",
               "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}

CASES = [
    (Serdes.string(), ["héllo", None, "", "wörld", "\U0001f600"]),
    (Serdes.long(), [0, None, -(2 ** 63), 2 ** 63 - 1, -1]),
    (Serdes.integer(), [7, -(2 ** 31), None, 2 ** 31 - 1]),
    (Serdes.double(), [3.25, None, -0.0, float("inf"), 1e-300]),
    (Serdes.bytes(), [b"\x00\xff", None, b""]),
    (Serdes.json(), [{"a": [1, None]}, None, "x", 3]),
    (Serdes.avro(AVRO_SCHEMA), [{"name": "ann", "age": 7}, None]),
]


@pytest.mark.parametrize("serde, values", CASES, ids=lambda c: getattr(c, "name", None))
def test_column_round_trip_matches_value_by_value(serde, values):
    encoded = serde.serialize_column(values)
    assert encoded.type == pa.binary()
    assert encoded.to_pylist() == [serde.serialize(v) for v in values]
    assert encoded.null_count == values.count(None)
    assert serde.deserialize_column(encoded) == values
    # chunked, sliced (non-zero offset) and large-binary columns decode the same
    chunked = pa.chunked_array([encoded.slice(1), encoded.slice(0, 1)])
    assert serde.deserialize_column(chunked) == values[1:] + values[:1]
    assert serde.deserialize_column(encoded.slice(1)) == values[1:]
    assert serde.deserialize_column(encoded.cast(pa.large_binary())) == values
    # the column codecs travel to executors with the serde (Spark pickles with cloudpickle)
    assert pickle.loads(cloudpickle.dumps(serde)).deserialize_column(encoded) == values


@pytest.mark.parametrize("serde", [c[0] for c in CASES], ids=lambda s: s.name)
def test_all_null_and_empty_columns(serde):
    assert serde.deserialize_column(pa.nulls(3, pa.binary())) == [None, None, None]
    assert serde.deserialize_column(pa.array([], pa.binary())) == []
    assert serde.deserialize_column(pa.chunked_array([], pa.binary())) == []
    assert serde.serialize_column([None, None]).to_pylist() == [None, None]
    assert serde.serialize_column([]).to_pylist() == []


@pytest.mark.parametrize("serde, payloads, fragment", [
    (Serdes.string(), [b"ok", b"\xff\xfe", b"\xc3"], "string() cannot deserialize 2 bytes [ff fe]"),
    (Serdes.string(), [b"\xed\xa0\x80"], "string() cannot deserialize 3 bytes [ed a0 80]"),  # a surrogate
    (Serdes.long(), [b"\x00" * 8, None, b"abc"], "long() cannot deserialize 3 bytes [61 62 63]"),
    (Serdes.integer(), [b"\x00" * 8], "integer() cannot deserialize 8 bytes"),
    (Serdes.double(), [b"\x00" * 4], "double() cannot deserialize 4 bytes"),
    (Serdes.json(), [b"1", b"{not json"], "json() cannot deserialize 9 bytes"),
])
def test_bad_payload_raises_the_per_value_error(serde, payloads, fragment):
    column = pa.array(payloads, pa.binary())
    with pytest.raises(SerializationError, match=re.escape(fragment)):
        serde.deserialize_column(column)
    first_bad = next(p for p in payloads if p is not None and _fails(serde, p))
    with pytest.raises(SerializationError) as per_value:
        serde.deserialize(first_bad)
    with pytest.raises(SerializationError) as per_column:
        serde.deserialize_column(column)
    assert str(per_column.value) == str(per_value.value)


def _fails(serde, payload) -> bool:
    try:
        serde.deserialize(payload)
    except SerializationError:
        return True
    return False


@pytest.mark.parametrize("serde, objs, fragment", [
    (Serdes.string(), ["a", b"bytes"], "string() cannot serialize bytes"),
    (Serdes.string(), ["a", 1], "string() cannot serialize int 1"),
    (Serdes.string(), ["\ud800"], "surrogates not allowed"),
    (Serdes.long(), [1, 2.0], "long() cannot serialize float 2.0"),
    (Serdes.long(), [2 ** 63], "long() cannot serialize int"),
    (Serdes.integer(), [2 ** 31], "integer() cannot serialize int"),
    (Serdes.double(), ["1.0"], "double() cannot serialize str"),
])
def test_unserializable_object_raises_the_per_value_error(serde, objs, fragment):
    with pytest.raises(SerializationError, match=re.escape(fragment)):
        serde.serialize_column(objs)


def test_column_serialize_accepts_what_the_per_value_serde_accepts():
    # bool is an int to struct.pack, a str subclass is a str: both go value by value
    assert Serdes.long().serialize_column([True, 5]).to_pylist() == [Serdes.long().serialize(1),
                                                                      Serdes.long().serialize(5)]

    class Name(str):
        pass

    assert Serdes.string().serialize_column([Name("x"), "y"]).to_pylist() == [b"x", b"y"]
    assert Serdes.double().serialize_column([1, 2.5]).to_pylist() == [Serdes.double().serialize(1),
                                                                       Serdes.double().serialize(2.5)]
