"""KStream#filter / filter_not (after Kafka Streams' KStreamFilterTest)."""
import pytest

from streamlib import Consumed, Produced, StreamsBuilder
from streamlib.processors import ProcessingError

from streams_helpers import I, S, driver_for, kvt

EXPECTED_KEYS = [1, 2, 3, 4, 5, 6, 7]


def is_multiple_of_three(key, value):
    return key % 3 == 0


def _run(build_step):
    builder = StreamsBuilder()
    stream = builder.stream("in", consumed=Consumed.with_(I, S))
    build_step(stream).to("out", produced=Produced.with_(I, S))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", I, S)
        for key in EXPECTED_KEYS:
            inp.pipe_input(key, f"V{key}", timestamp=key * 10)
        return driver.create_output_topic("out", I, S).read_records_to_list()


def test_filter_keeps_matching_records_with_their_timestamps():
    out = _run(lambda s: s.filter(is_multiple_of_three))
    assert kvt(out) == [(3, "V3", 30), (6, "V6", 60)]


def test_filter_not_keeps_the_rest():
    out = _run(lambda s: s.filter_not(is_multiple_of_three))
    assert kvt(out) == [(1, "V1", 10), (2, "V2", 20), (4, "V4", 40), (5, "V5", 50), (7, "V7", 70)]


def test_filter_and_filter_not_partition_the_input():
    kept = _run(lambda s: s.filter(is_multiple_of_three))
    dropped = _run(lambda s: s.filter_not(is_multiple_of_three))
    assert sorted(r.key for r in kept + dropped) == EXPECTED_KEYS


def test_filter_uses_truthiness_and_sees_null_values_and_keeps_headers():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).filter(lambda k, v: v).to("out")
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("a", None, 1)
        inp.pipe_input("b", "", 2)
        inp.pipe_input(None, "x", 3, headers={"h": b"1"})
        out = driver.create_output_topic("out", S, S).read_records_to_list()
    assert kvt(out) == [(None, "x", 3)]
    assert out[0].headers == {"h": b"1"}


def test_chained_filters():
    out = _run(lambda s: s.filter(lambda k, v: k > 2).filter_not(lambda k, v: k % 2 == 0))
    assert [r.key for r in out] == [3, 5, 7]


def test_predicate_that_raises_fails_with_node_and_record_position():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(I, S)).filter(lambda k, v: 1 // (k - 2), name="my-filter") \
        .to("out", produced=Produced.with_(I, S))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", I, S)
        inp.pipe_input(1, "a", 5)
        with pytest.raises(ProcessingError) as err:
            inp.pipe_input(2, "b", 6)
    message = str(err.value)
    assert "my-filter" in message and "ZeroDivisionError" in message
    assert "'in'" in message and "partition 0" in message and "offset 1" in message
