"""The TopologyTestDriver API of API.md (after Kafka Streams' TopologyTestDriverTest)."""
import struct

import pytest

from streamlib import (Consumed, Materialized, Produced, Serdes, StreamsBuilder, StreamsConfig,
                       TopologyError, TopologyTestDriver)
from streamlib.processors import DeserializationFailure, ProcessingError

from streams_helpers import APP, I, L, S, config, driver_for, kvt

B = Serdes.bytes()


def _passthrough(consumed=Consumed.with_(S, S)):
    builder = StreamsBuilder()
    builder.stream("in", consumed=consumed).to("out", produced=Produced.with_(consumed.key_serde,
                                                                              consumed.value_serde))
    return builder.build()


def _counting():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key() \
        .count(materialized=Materialized.as_("counts")).to_stream().to("out", produced=Produced.with_(S, L))
    return builder.build()


def test_pipe_and_read_in_order_with_timestamps_and_headers():
    with driver_for(_passthrough()) as driver:
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", S, S)
        assert out.is_empty()
        inp.pipe_input("k1", "v1", 100, headers={"trace": b"abc"})
        inp.pipe_input(None, "v2", 50)
        assert not out.is_empty()
        assert out.read_key_value() == ("k1", "v1")
        (rec,) = out.read_records_to_list()
        assert (rec.key, rec.value, rec.timestamp, rec.headers) == (None, "v2", 50, {})
        assert out.is_empty()
        with pytest.raises(IndexError):
            out.read_key_value()


def test_pipe_key_value_list_and_read_key_values_to_list():
    with driver_for(_passthrough()) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list([("a", "1"), ("b", None), ("a", "3")])
        out = driver.create_output_topic("out", S, S)
        assert out.read_key_values_to_list() == [("a", "1"), ("b", None), ("a", "3")]
        assert out.read_key_values_to_list() == []


def test_default_timestamp_is_the_wall_clock():
    with TopologyTestDriver(_passthrough(), config(), initial_wall_clock_time=1000) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("a", "1")
        driver.advance_wall_clock_time(500)
        inp.pipe_input("b", "2")
        from datetime import timedelta
        driver.advance_wall_clock_time(timedelta(seconds=1))
        inp.pipe_input("c", "3")
        inp.pipe_input("d", "4", timestamp=7)
        out = driver.create_output_topic("out", S, S).read_records_to_list()
    assert [r.timestamp for r in out] == [1000, 1500, 2500, 7]


def test_output_topic_created_after_the_records_were_written_still_has_them():
    with driver_for(_passthrough()) as driver:
        driver.create_input_topic("in", S, S).pipe_input("a", "1", 1)
        assert driver.create_output_topic("out", S, S).read_key_values_to_list() == [("a", "1")]
        assert driver.create_output_topic("never-written", S, S).is_empty()


def test_unknown_input_topic_and_unknown_store_are_errors():
    with driver_for(_counting()) as driver:
        with pytest.raises(TopologyError, match="'nope'"):
            driver.create_input_topic("nope", S, S)
        with pytest.raises(KeyError, match="'nope'"):
            driver.get_key_value_store("nope")


def test_pipe_input_runs_every_subtopology_before_returning():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).select_key(lambda k, v: v) \
        .group_by_key().count(materialized=Materialized.as_("counts"))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("1", "x", 1)
        assert driver.get_key_value_store("counts").get("x") == 1
        inp.pipe_input("2", "x", 2)
        assert driver.get_key_value_store("counts").get("x") == 2


def test_key_value_store_queries():
    with driver_for(_counting()) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list(
            [("apple", "x"), ("apricot", "x"), ("banana", "x"), ("apple", "x"), ("cherry", "x")])
        store = driver.get_key_value_store("counts")
        assert store.get("apple") == 2 and store.get("durian") is None
        assert list(store.all()) == [("apple", 2), ("apricot", 1), ("banana", 1), ("cherry", 1)]
        assert list(store.range("apricot", "banana")) == [("apricot", 1), ("banana", 1)]
        assert list(store.range("b", None)) == [("banana", 1), ("cherry", 1)]
        assert list(store.prefix_scan("ap")) == [("apple", 2), ("apricot", 1)]
        assert store.approximate_num_entries() >= 4
        assert set(driver.get_all_state_stores()) == {"counts"}


def test_store_getters_check_the_store_kind():
    with driver_for(_counting()) as driver:
        with pytest.raises(TypeError, match="'counts' is a key-value store, not a window store"):
            driver.get_window_store("counts")
        with pytest.raises(TypeError, match="not a session store"):
            driver.get_session_store("counts")
        with pytest.raises(KeyError, match="no store named 'nope'"):
            driver.get_window_store("nope")


def test_dropped_records_metric_counts_null_keys_in_aggregations():
    with driver_for(_counting()) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list([(None, "a"), ("k", "b"), (None, "c")])
        metrics = driver.metrics()
        assert metrics["dropped_records"] == 2
        assert driver.create_output_topic("out", S, L).read_key_values_to_list() == [("k", 1)]


def test_user_function_error_names_topic_partition_offset_and_node():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).map_values(lambda v: v.upper(), name="upper") \
        .to("out")
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("a", "x")
        with pytest.raises(ProcessingError) as err:
            inp.pipe_input("b", None)
    assert "AttributeError" in str(err.value)
    assert "in upper at topic 'in' partition 0 offset 1" in str(err.value)
    assert err.value.node == "upper" and err.value.record.offset == 1


def test_user_function_error_after_a_repartition_names_the_repartition_topic():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).select_key(lambda k, v: v) \
        .group_by_key().aggregate(lambda: 0, lambda k, v, agg: agg + int(v), materialized=Materialized.as_("a"))
    with driver_for(builder) as driver:
        with pytest.raises(ProcessingError, match=r"KSTREAM-AGGREGATE-\d+ at topic '.*-repartition' partition 0"):
            driver.create_input_topic("in", S, S).pipe_input("k", "not-a-number", 1)


def _bad_value_topology():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, I)).to("out", produced=Produced.with_(S, I))
    return builder.build()


def test_deserialization_error_fails_by_default():
    with driver_for(_bad_value_topology()) as driver:
        inp = driver.create_input_topic("in", S, B)
        inp.pipe_input("ok", struct.pack(">i", 5), 1)
        with pytest.raises(DeserializationFailure, match=r"topic 'in' partition 0 offset 1"):
            inp.pipe_input("bad", b"xyz", 2)
        assert driver.create_output_topic("out", S, I).read_key_values_to_list() == [("ok", 5)]


def test_deserialization_error_log_and_continue_skips_and_counts():
    with driver_for(_bad_value_topology(), deserialization_exception_handler="log_and_continue") as driver:
        inp = driver.create_input_topic("in", S, B)
        inp.pipe_input("bad", b"xyz", 1)
        inp.pipe_input("ok", struct.pack(">i", 7), 2)
        assert driver.create_output_topic("out", S, I).read_key_values_to_list() == [("ok", 7)]
        assert driver.metrics()["skipped_records"] == 1


def test_deserialization_error_dead_letter_keeps_original_bytes_and_error_headers():
    with driver_for(_bad_value_topology(), deserialization_exception_handler="dead_letter") as driver:
        inp = driver.create_input_topic("in", S, B)
        inp.pipe_input("ok", struct.pack(">i", 1), 10)
        inp.pipe_input("bad", b"xyz", 20, headers={"orig": b"h"})
        assert driver.create_output_topic("out", S, I).read_key_values_to_list() == [("ok", 1)]
        (dead,) = driver.create_output_topic(f"{APP}-dlq", B, B).read_records_to_list()
        assert driver.metrics()["dead_letter_records"] == 1
    assert (dead.key, dead.value, dead.timestamp) == (b"bad", b"xyz", 20)
    assert dead.headers["orig"] == b"h"
    assert dead.headers["streamlib.topic"] == b"in"
    assert struct.unpack(">q", dead.headers["streamlib.partition"])[0] == 0
    assert struct.unpack(">q", dead.headers["streamlib.offset"])[0] == 1
    assert dead.headers["streamlib.error"]


def test_driver_emits_every_update_even_if_the_config_enables_caching():
    with TopologyTestDriver(_counting(), StreamsConfig(application_id=APP, cache_max_bytes=10_000)) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list([("k", "a"), ("k", "b"), ("k", "c")])
        assert driver.create_output_topic("out", S, L).read_key_values_to_list() == [("k", 1), ("k", 2), ("k", 3)]


def test_stores_start_empty_in_every_driver():
    for _ in range(2):
        with driver_for(_counting()) as driver:
            driver.create_input_topic("in", S, S).pipe_input("k", "v", 1)
            assert driver.get_key_value_store("counts").get("k") == 1


def test_timestamp_extractor_sets_record_timestamps_and_its_errors_name_the_source():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S, timestamp_extractor=lambda k, v, ts: int(v) * 1000)) \
        .to("out")
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("a", "3", 1)
        assert [r.timestamp for r in driver.create_output_topic("out", S, S).read_records_to_list()] == [3000]
        with pytest.raises(ProcessingError, match=r"timestamp extractor failed.*KSTREAM-SOURCE-\d+ at topic 'in' "
                                                  r"partition 0 offset 1"):
            inp.pipe_input("b", "x", 2)


def test_read_helpers_for_values_and_maps():
    with driver_for(_passthrough()) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list([("a", "1"), ("b", "2"), ("a", "3")])
        out = driver.create_output_topic("out", S, S)
        assert out.get_queue_size() == 3
        assert out.read_value() == "1"
        assert out.read_key_values_to_map() == {"b": "2", "a": "3"}


def test_records_written_to_a_topic_the_topology_reads_are_processed_too():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).map_values(str.upper).to("mid")
    builder.stream("mid", consumed=Consumed.with_(S, S)).map_values(lambda v: v + "!").to("out")
    with driver_for(builder) as driver:
        driver.create_input_topic("in", S, S).pipe_input("k", "a", 4)
        assert driver.create_output_topic("mid", S, S).read_key_values_to_list() == [("k", "A")]
        assert kvt(driver.create_output_topic("out", S, S).read_records_to_list()) == [("k", "A!", 4)]


def test_outputs_are_queued_like_kafka_streams_driver():
    """Checked against Kafka Streams 4.3.1's driver: the two records the flat_map writes
    to the first repartition are both processed before what they write to the second."""
    builder = StreamsBuilder()
    level1 = builder.stream("in", consumed=Consumed.with_(S, S)) \
        .flat_map(lambda k, v: [(v + "1", v), (v + "2", v)]).repartition()
    level1.to("out")
    level1.map_values(lambda v: v + "-deep").repartition().to("out")
    with driver_for(builder) as driver:
        driver.create_input_topic("in", S, S).pipe_input("k", "x", 1)
        out = driver.create_output_topic("out", S, S).read_key_values_to_list()
    assert out == [("x1", "x"), ("x2", "x"), ("x1", "x-deep"), ("x2", "x-deep")]


def test_a_failed_record_leaves_no_partial_output_or_state_behind():
    builder = StreamsBuilder()
    stream = builder.stream("in", consumed=Consumed.with_(S, S)) \
        .flat_map(lambda k, v: ((k, v[i * 5]) for i in range(2)))   # the second output fails for short values
    stream.to("out")
    stream.group_by_key().count(materialized=Materialized.as_("c"))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        with pytest.raises(ProcessingError, match="IndexError"):
            inp.pipe_input("k", "abc", 1)
        inp.pipe_input("k", "abcdefg", 2)
        assert driver.create_output_topic("out", S, S).read_key_values_to_list() == [("k", "a"), ("k", "f")]
        assert driver.get_key_value_store("c").get("k") == 2
