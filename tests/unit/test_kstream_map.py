"""map, map_values, flat_map, flat_map_values, select_key (after KStreamMapTest,
KStreamMapValuesTest, KStreamFlatMapTest, KStreamFlatMapValuesTest, KStreamSelectKeyTest)."""
import pytest

from streamlib import Consumed, Produced, StreamsBuilder
from streamlib.processors import ProcessingError

from streams_helpers import I, S, driver_for, kvt


def _run(build_step, records, in_serdes=(I, S), out_serdes=(S, I)):
    builder = StreamsBuilder()
    stream = builder.stream("in", consumed=Consumed.with_(*in_serdes))
    build_step(stream).to("out", produced=Produced.with_(*out_serdes))
    topology = builder.build()
    with driver_for(topology) as driver:
        inp = driver.create_input_topic("in", *in_serdes)
        for key, value, ts in records:
            inp.pipe_input(key, value, ts)
        return driver.create_output_topic("out", *out_serdes).read_records_to_list()


def test_map_swaps_key_and_value_keeping_timestamps():
    records = [(k, f"V{k}", 10 + k) for k in range(4)]
    out = _run(lambda s: s.map(lambda k, v: (v, k)), records)
    assert kvt(out) == [("V0", 0, 10), ("V1", 1, 11), ("V2", 2, 12), ("V3", 3, 13)]


def test_map_values_keeps_keys():
    records = [(k, str(k), 0) for k in (1, 10, 100, 1000)]
    out = _run(lambda s: s.map_values(len), records, out_serdes=(I, I))
    assert kvt(out) == [(1, 1, 0), (10, 2, 0), (100, 3, 0), (1000, 4, 0)]


def test_map_values_sees_null_values():
    out = _run(lambda s: s.map_values(lambda v: "null" if v is None else v.upper()),
               [(1, None, 1), (2, "a", 2)], out_serdes=(I, S))
    assert kvt(out) == [(1, "null", 1), (2, "A", 2)]


def test_flat_map_emits_zero_or_more_records_per_input():
    records = [(k, f"V{k}", k) for k in range(4)]
    out = _run(lambda s: s.flat_map(lambda k, v: [(10 * k + i, v) for i in range(k)]), records,
               out_serdes=(I, S))
    assert kvt(out) == [(10, "V1", 1), (20, "V2", 2), (21, "V2", 2),
                        (30, "V3", 3), (31, "V3", 3), (32, "V3", 3)]


def test_flat_map_accepts_generators():
    def gen(k, v):
        yield k, v
        yield k + 100, v + "!"
    out = _run(lambda s: s.flat_map(gen), [(1, "a", 5)], out_serdes=(I, S))
    assert kvt(out) == [(1, "a", 5), (101, "a!", 5)]


def test_flat_map_values_keeps_key_and_timestamp():
    records = [(k, str(k), 7) for k in range(4)]
    out = _run(lambda s: s.flat_map_values(lambda v: ["v" + v, "V" + v]), records, out_serdes=(I, S))
    assert kvt(out) == [(0, "v0", 7), (0, "V0", 7), (1, "v1", 7), (1, "V1", 7),
                        (2, "v2", 7), (2, "V2", 7), (3, "v3", 7), (3, "V3", 7)]


def test_flat_map_values_empty_result_emits_nothing():
    out = _run(lambda s: s.flat_map_values(lambda v: []), [(1, "a", 1)], out_serdes=(I, S))
    assert out == []


def test_select_key_from_value():
    names = {1: "ONE", 2: "TWO", 3: "THREE"}
    records = [(None, v, v) for v in (1, 2, 3)]
    out = _run(lambda s: s.select_key(lambda k, v: names[v]), records, in_serdes=(S, I), out_serdes=(S, I))
    assert kvt(out) == [("ONE", 1, 1), ("TWO", 2, 2), ("THREE", 3, 3)]


def test_key_changing_steps_repartition_before_grouping_but_value_steps_do_not():
    for step, expected_subs in [(lambda s: s.map(lambda k, v: (v, k)), 2),
                                (lambda s: s.select_key(lambda k, v: v), 2),
                                (lambda s: s.flat_map(lambda k, v: [(v, k)]), 2),
                                (lambda s: s.map_values(str.upper), 1),
                                (lambda s: s.flat_map_values(lambda v: [v]), 1),
                                (lambda s: s.filter(lambda k, v: True), 1)]:
        builder = StreamsBuilder()
        step(builder.stream("in", consumed=Consumed.with_(S, S))).group_by_key().count()
        assert len(builder.build().subtopologies) == expected_subs


def test_mapper_returning_a_non_pair_fails_with_the_node_name():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).map(lambda k, v: v, name="bad-map").to("out")
    with driver_for(builder) as driver:
        with pytest.raises(ProcessingError, match="bad-map.*offset 0"):
            driver.create_input_topic("in", S, S).pipe_input("k", "abc", 1)
