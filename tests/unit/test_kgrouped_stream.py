"""count / reduce / aggregate of grouped streams (after KGroupedStreamImplTest,
KStreamAggregateTest/KStreamReduceTest): results as KTable updates, timestamps =
max of the inputs, null keys and null values dropped and counted."""
import pytest

from streamlib import Consumed, Grouped, Materialized, Produced, StreamsBuilder
from streamlib.processors import ProcessingError

from streams_helpers import APP, L, S, driver_for, kvt

INPUT = [("A", "1", 10), ("B", "2", 15), ("A", "3", 5), (None, "4", 20), ("A", None, 21),
         ("C", "5", 3), ("B", "6", 30)]


def _run(aggregate, value_serde, records=INPUT):
    builder = StreamsBuilder()
    grouped = builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key()
    aggregate(grouped).to_stream().to("out", produced=Produced.with_(S, value_serde))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        for k, v, ts in records:
            inp.pipe_input(k, v, ts)
        out = kvt(driver.create_output_topic("out", S, value_serde).read_records_to_list())
        store = list(driver.get_key_value_store("agg").all())
        return out, store, driver.metrics()["dropped_records"]


def test_count_emits_every_update_with_max_timestamp_and_drops_null_keys_and_values():
    out, store, dropped = _run(lambda g: g.count(materialized=Materialized.as_("agg")), L)
    assert out == [("A", 1, 10), ("B", 1, 15), ("A", 2, 10), ("C", 1, 3), ("B", 2, 30)]
    assert store == [("A", 2), ("B", 2), ("C", 1)]
    assert dropped == 2


def test_reduce():
    out, store, dropped = _run(lambda g: g.reduce(lambda agg, v: agg + "+" + v,
                                                  materialized=Materialized.as_("agg")), S)
    assert out == [("A", "1", 10), ("B", "2", 15), ("A", "1+3", 10), ("C", "5", 3), ("B", "2+6", 30)]
    assert store == [("A", "1+3"), ("B", "2+6"), ("C", "5")]
    assert dropped == 2


def test_aggregate_starts_from_the_initializer_and_passes_the_key():
    out, store, dropped = _run(
        lambda g: g.aggregate(lambda: "0", lambda k, v, agg: f"{agg}+{k}{v}",
                              materialized=Materialized.as_("agg").with_value_serde(S)), S)
    assert out == [("A", "0+A1", 10), ("B", "0+B2", 15), ("A", "0+A1+A3", 10), ("C", "0+C5", 3),
                   ("B", "0+B2+B6", 30)]
    assert dict(store) == {"A": "0+A1+A3", "B": "0+B2+B6", "C": "0+C5"}
    assert dropped == 2


def test_aggregate_timestamps_are_the_maximum_seen_per_key():
    out, _, _ = _run(lambda g: g.count(materialized=Materialized.as_("agg")), L,
                     records=[("A", "x", 10), ("A", "x", 5), ("A", "x", 15), ("A", "x", 12)])
    assert out == [("A", 1, 10), ("A", 2, 10), ("A", 3, 15), ("A", 4, 15)]


def test_count_store_values_keep_their_timestamp():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key() \
        .count(materialized=Materialized.as_("c"))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("k", "v", 7)
        inp.pipe_input("k", "v", 3)
        assert driver.get_key_value_store("c").get_with_timestamp("k") == (2, 7)


def test_group_by_repartitions_and_counts_words():
    builder = StreamsBuilder()
    builder.stream("lines", consumed=Consumed.with_(S, S)) \
        .flat_map_values(str.split) \
        .group_by(lambda k, word: word, Grouped.with_(S, S, name="words")) \
        .count(materialized=Materialized.as_("word-counts")) \
        .to_stream().to("counts", produced=Produced.with_(S, L))
    topology = builder.build()
    assert len(topology.subtopologies) == 2
    assert f"{APP}-words-repartition" in topology.describe(APP)
    with driver_for(topology) as driver:
        inp = driver.create_input_topic("lines", S, S)
        inp.pipe_input("l1", "a b a", 1)
        inp.pipe_input("l2", "b c", 2)
        out = kvt(driver.create_output_topic("counts", S, L).read_records_to_list())
        assert out == [("a", 1, 1), ("b", 1, 1), ("a", 2, 1), ("b", 2, 2), ("c", 1, 2)]
        store = driver.get_key_value_store("word-counts")
        assert list(store.all()) == [("a", 2), ("b", 2), ("c", 1)]
        assert list(store.range("b", "c")) == [("b", 2), ("c", 1)]


def test_group_by_to_a_null_key_drops_and_counts_the_record():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)) \
        .group_by(lambda k, v: None if v == "skip" else v, Grouped.with_(S, S)) \
        .count(materialized=Materialized.as_("c"))
    with driver_for(builder) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list([("1", "x"), ("2", "skip"), ("3", "x")])
        assert list(driver.get_key_value_store("c").all()) == [("x", 2)]
        assert driver.metrics()["dropped_records"] == 1


def test_group_by_key_after_a_key_change_repartitions_once():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).select_key(lambda k, v: v[0]) \
        .group_by_key(Grouped.as_("by-first")).reduce(lambda a, v: max(a, v), materialized=Materialized.as_("m"))
    topology = builder.build()
    assert [sub.repartition_inputs for sub in topology.subtopologies] == [[], ["by-first-repartition"]]
    with driver_for(topology) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list([("1", "ab"), ("2", "ax"), ("3", "b")])
        assert list(driver.get_key_value_store("m").all()) == [("a", "ax"), ("b", "b")]


def test_several_aggregations_of_one_grouped_stream():
    builder = StreamsBuilder()
    grouped = builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key()
    grouped.count(materialized=Materialized.as_("count"))
    grouped.reduce(lambda a, v: a + v, materialized=Materialized.as_("concat"))
    with driver_for(builder) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list([("k", "a"), ("k", "b")])
        assert driver.get_key_value_store("count").get("k") == 2
        assert driver.get_key_value_store("concat").get("k") == "ab"


def test_aggregator_that_raises_names_the_node():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key() \
        .reduce(lambda a, v: int(v), materialized=Materialized.as_("r"))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("k", "1", 1)
        with pytest.raises(ProcessingError, match=r"ValueError.*KSTREAM-REDUCE-\d+ at topic 'in' partition 0 offset 1"):
            inp.pipe_input("k", "x", 2)


def test_with_caching_a_commit_emits_one_update_per_key_with_its_latest_count(tmp_path):
    from streams_helpers import run_cached_batch
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key() \
        .count(materialized=Materialized.as_("c")).to_stream().to("out", produced=Produced.with_(S, L))
    rows = [("in", k.encode(), b"v", ts) for k, ts in [("a", 5), ("b", 1), ("a", 9), ("a", 2)]]
    out = run_cached_batch(builder.build(), rows, tmp_path)
    assert [(t, ts, S.deserialize(k), L.deserialize(v)) for t, ts, k, v in out] == [
        ("out", 1, "b", 1), ("out", 9, "a", 3)]


def test_aggregate_value_that_the_store_serde_cannot_write_names_the_store_and_key():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key() \
        .aggregate(lambda: 0, lambda k, v, agg: agg + 1, materialized=Materialized.as_("no-serde"))
    with driver_for(builder) as driver:  # default value serde is string(): an int cannot be stored
        with pytest.raises(ProcessingError, match=r"store 'no-serde' cannot serialize the value 1 of key 'k'"):
            driver.create_input_topic("in", S, S).pipe_input("k", "v", 1)


def test_store_with_caching_disabled_emits_every_update_even_when_the_app_caches(tmp_path):
    from streams_helpers import run_cached_batch
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key() \
        .count(materialized=Materialized.as_("c").with_caching_disabled()) \
        .to_stream().to("out", produced=Produced.with_(S, L))
    rows = [("in", b"a", b"v", 1), ("in", b"a", b"v", 2)]
    out = run_cached_batch(builder.build(), rows, tmp_path)
    assert [(ts, L.deserialize(v)) for _, ts, _, v in out] == [(1, 1), (2, 2)]
