"""Undecodable keys and values for every serde, at every handler setting, counted in
metrics() (issue 11, item 7). Runs the same processors as Spark, in the test driver."""
from __future__ import annotations

import pytest

from streamlib import Consumed, Materialized, Serdes, StreamsBuilder, StreamsConfig, TopologyTestDriver
from streamlib.processors.io import DeserializationFailure

B, S = Serdes.bytes(), Serdes.string()
SCHEMA = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
SERDES = {  # serde, a good value, bytes it cannot read
    "string": (Serdes.string(), "ok", b"\xff\xfe"),
    "long": (Serdes.long(), 7, b"abc"),
    "integer": (Serdes.integer(), 7, b"ab"),
    "double": (Serdes.double(), 0.5, b"xyz"),
    "json": (Serdes.json(), {"a": 1}, b"{not json"),
    "avro": (Serdes.avro(SCHEMA), {"a": 1}, b"\x02\xff\xff"),
}


def counting(serde, side):
    builder = StreamsBuilder()
    key_serde, value_serde = (serde, S) if side == "key" else (S, serde)
    (builder.stream("in", consumed=Consumed.with_(key_serde, value_serde))
     .map(lambda k, v: ("all", "1")).group_by_key().count(Materialized.as_("n")))
    return builder.build()


def _pipe(name, side, handler):
    serde, good, bad = SERDES[name]
    driver = TopologyTestDriver(counting(serde, side), StreamsConfig(
        application_id="app", deserialization_exception_handler=handler))
    inp = driver.create_input_topic("in", B, B)
    good_bytes = serde.serialize(good)
    pairs = [(good_bytes, b"v"), (bad, b"v"), (good_bytes, b"v")] if side == "key" else \
        [(b"k", good_bytes), (b"k", bad), (b"k", good_bytes)]
    for key, value in pairs:
        inp.pipe_input(key, value)
    return driver


@pytest.mark.parametrize("side", ["key", "value"])
@pytest.mark.parametrize("name", sorted(SERDES))
def test_fail_names_serde_and_record(name, side):
    with pytest.raises(DeserializationFailure, match=f"topic 'in' partition 0 offset 1.*serde {name}"):
        _pipe(name, side, "fail")


@pytest.mark.parametrize("side", ["key", "value"])
@pytest.mark.parametrize("name", sorted(SERDES))
@pytest.mark.parametrize("handler,counter", [("log_and_continue", "skipped_records"),
                                             ("dead_letter", "dead_letter_records")])
def test_handlers_skip_or_dead_letter_and_count(name, side, handler, counter):
    driver = _pipe(name, side, handler)
    assert dict(driver.get_key_value_store("n").all()) == {"all": 2}
    assert driver.metrics()[counter] == 1
    if handler == "dead_letter":
        [dead] = driver.create_output_topic("app-dlq", B, B).read_records_to_list()
        assert SERDES[name][2] in (dead.key, dead.value)
