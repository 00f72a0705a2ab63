"""peek and foreach (after KStreamPeekTest, KStreamForeachTest)."""
import pytest

from streamlib import Consumed, Produced, StreamsBuilder
from streamlib.processors import ProcessingError

from streams_helpers import I, S, driver_for, kvt

INPUT = [(0, "zero"), (1, "one"), (2, "two"), (3, "three")]


def test_peek_sees_every_record_and_forwards_it_unchanged():
    seen = []
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(I, S)).peek(lambda k, v: seen.append((k, v))) \
        .to("out", produced=Produced.with_(I, S))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", I, S)
        for ts, (k, v) in enumerate(INPUT):
            inp.pipe_input(k, v, ts * 10)
        out = driver.create_output_topic("out", I, S).read_records_to_list()
    assert seen == INPUT
    assert kvt(out) == [(k, v, i * 10) for i, (k, v) in enumerate(INPUT)]


def test_peek_runs_before_downstream_steps():
    events = []
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(I, S)) \
        .peek(lambda k, v: events.append(("peek", k))) \
        .foreach(lambda k, v: events.append(("foreach", k)))
    with driver_for(builder) as driver:
        driver.create_input_topic("in", I, S).pipe_key_value_list(INPUT[:2])
    assert events == [("peek", 0), ("foreach", 0), ("peek", 1), ("foreach", 1)]


def test_foreach_is_called_for_every_record_in_order_and_is_terminal():
    seen = []
    builder = StreamsBuilder()
    result = builder.stream("in", consumed=Consumed.with_(I, S)) \
        .foreach(lambda k, v: seen.append((k * 2, v.upper())))
    assert result is None
    with driver_for(builder) as driver:
        driver.create_input_topic("in", I, S).pipe_key_value_list(INPUT)
        assert driver.metrics()["records_out"] == 0
    assert seen == [(0, "ZERO"), (2, "ONE"), (4, "TWO"), (6, "THREE")]


def test_foreach_after_filter_and_null_values():
    seen = []
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).filter_not(lambda k, v: k == "x") \
        .foreach(lambda k, v: seen.append((k, v)))
    with driver_for(builder) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list([("a", None), ("x", "1"), (None, "b")])
    assert seen == [("a", None), (None, "b")]


def test_foreach_action_that_raises_fails_with_node_and_offset():
    def action(k, v):
        if v == "boom":
            raise RuntimeError("bad value")
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).foreach(action, name="sink-action")
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_key_value_list([("a", "ok"), ("b", "ok")])
        with pytest.raises(ProcessingError, match=r"RuntimeError: bad value \(raised at "
                                                  r"test_kstream_peek_foreach.py:\d+ in action\) "
                                                  r"in sink-action at topic 'in' partition 0 offset 2"):
            inp.pipe_input("c", "boom")
