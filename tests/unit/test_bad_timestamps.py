"""Negative or missing timestamps follow Kafka's timestamp-extractor rules (issue 11,
item 7): the record's own invalid timestamp stops the task, whatever the
deserialization handler (``FailOnInvalidTimestamp``, Kafka's default extractor); an
extractor's negative result drops the record and counts it (Kafka's ``RecordQueue``)."""
from __future__ import annotations

import pytest

from streamlib import Consumed, Serdes, StreamsBuilder, StreamsConfig, TopologyTestDriver
from streamlib.processors.base import ProcessingError

S = Serdes.string()


def passthrough(extractor=None):
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S, timestamp_extractor=extractor)).to("out")
    return builder.build()


def _run(topology, handler="fail"):
    driver = TopologyTestDriver(topology, StreamsConfig(application_id="app",
                                                         deserialization_exception_handler=handler))
    inp = driver.create_input_topic("in", S, S)
    inp.pipe_input("a", "1", 5)
    inp.pipe_input("b", "2", -3)
    inp.pipe_input("c", "3", 7)
    return driver


def test_a_negative_record_timestamp_fails_with_a_clear_message_by_default():
    with pytest.raises(ProcessingError, match="invalid \\(negative or missing\\) timestamp -3.*timestamp_extractor"):
        _run(passthrough())


@pytest.mark.parametrize("handler", ["log_and_continue", "dead_letter"])
def test_a_negative_record_timestamp_fails_whatever_the_deserialization_handler(handler):
    """As Kafka Streams' default extractor (FailOnInvalidTimestamp): not a deserialization
    error, so no handler skips it (checked against Kafka Streams 4.3.1's driver)."""
    with pytest.raises(ProcessingError, match="invalid \\(negative or missing\\) timestamp -3"):
        _run(passthrough(), handler)


def test_an_extractor_returning_the_timestamp_unchanged_drops_negative_ones():
    driver = _run(passthrough(lambda key, value, ts: ts), "log_and_continue")
    assert driver.create_output_topic("out", S, S).read_key_values_to_list() == [("a", "1"), ("c", "3")]
    assert driver.metrics()["dropped_records"] == 1


def test_an_extractor_returning_a_negative_timestamp_drops_and_counts_the_record():
    driver = _run(passthrough(lambda key, value, ts: -1 if value == "3" else ts + 10), "fail")
    out = driver.create_output_topic("out", S, S)
    assert [(r.key, r.timestamp) for r in out.read_records_to_list()] == [("a", 15), ("b", 7)]
    assert driver.metrics()["dropped_records"] == 1
