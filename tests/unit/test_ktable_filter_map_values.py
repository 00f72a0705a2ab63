"""KTable filter / filter_not / map_values (after KTableFilterTest, KTableMapValuesTest)."""
import pytest

from streamlib import Consumed, Grouped, Materialized, Produced, StreamsBuilder

from streams_helpers import I, S, driver_for, kvt

INPUT = [("A", 1, 10), ("B", 2, 5), ("C", 3, 8), ("D", 4, 14), ("A", None, 18), ("B", None, 15)]


def is_even(k, v):
    return v % 2 == 0


def _filter_outputs(materialize_filter):
    builder = StreamsBuilder()
    table = builder.table("in", consumed=Consumed.with_(S, I))
    kept = table.filter(is_even, materialized=Materialized.as_("store2") if materialize_filter else None)
    dropped = table.filter_not(is_even)
    kept.to_stream().to("even", produced=Produced.with_(S, I))
    dropped.to_stream().to("odd", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, I)
        for k, v, ts in INPUT:
            inp.pipe_input(k, v, ts)
        return (kvt(driver.create_output_topic("even", S, I).read_records_to_list()),
                kvt(driver.create_output_topic("odd", S, I).read_records_to_list()))


@pytest.mark.parametrize("materialize_filter", [False, True])
def test_filtered_out_rows_are_forwarded_as_deletes(materialize_filter):
    # Kafka's KTableFilterTest#doTestKTable: without old values downstream, every
    # row that does not match becomes a tombstone (the filter cannot know whether
    # the key had a row before).
    even, odd = _filter_outputs(materialize_filter)
    assert even == [("A", None, 10), ("B", 2, 5), ("C", None, 8), ("D", 4, 14),
                    ("A", None, 18), ("B", None, 15)]
    assert odd == [("A", 1, 10), ("B", None, 5), ("C", 3, 8), ("D", None, 14),
                   ("A", None, 18), ("B", None, 15)]


def test_materialized_filter_store_follows_updates():
    # Kafka's KTableFilterTest#doTestValueGetter, read through the store.
    builder = StreamsBuilder()
    table = builder.table("in", consumed=Consumed.with_(S, I))
    table.filter(is_even, materialized=Materialized.as_("even"))
    table.filter_not(is_even, materialized=Materialized.as_("odd"))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, I)
        even = driver.get_key_value_store("even")
        odd = driver.get_key_value_store("odd")
        for k, v, ts in [("A", 1, 5), ("B", 1, 10), ("C", 1, 15)]:
            inp.pipe_input(k, v, ts)
        assert list(even.all()) == []
        assert [(k, odd.get_with_timestamp(k)) for k in "ABC"] == [("A", (1, 5)), ("B", (1, 10)), ("C", (1, 15))]
        inp.pipe_input("A", 2, 10)
        inp.pipe_input("B", 2, 5)
        assert even.get_with_timestamp("A") == (2, 10) and even.get_with_timestamp("B") == (2, 5)
        assert list(odd.all()) == [("C", 1)]
        inp.pipe_input("A", 3, 15)
        assert list(even.all()) == [("B", 2)]
        assert list(odd.all()) == [("A", 3), ("C", 1)]
        inp.pipe_input("A", None, 10)
        inp.pipe_input("B", None, 20)
        assert list(even.all()) == []
        assert list(odd.all()) == [("C", 1)]


def test_an_update_that_stops_matching_becomes_a_delete_downstream_of_a_regrouping():
    # With old values needed downstream (group_by), a filtered-out row that was never
    # in the filtered table produces no change; one that was there is subtracted.
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, I)) \
        .filter(lambda k, v: v > 10) \
        .group_by(lambda k, v: ("all", v), Grouped.with_(S, I)) \
        .aggregate(lambda: 0, lambda k, v, agg: agg + v, lambda k, v, agg: agg - v,
                   materialized=Materialized.as_("sum").with_value_serde(I)) \
        .to_stream().to("out", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, I)
        inp.pipe_input("A", 5, 1)    # never matched: nothing
        inp.pipe_input("A", 20, 2)   # +20
        inp.pipe_input("B", 30, 3)   # +30
        inp.pipe_input("A", 7, 4)    # A stops matching: -20
        inp.pipe_input("C", 1, 5)    # nothing
        inp.pipe_input("B", None, 6)  # -30
        out = kvt(driver.create_output_topic("out", S, I).read_records_to_list())
        assert out == [("all", 20, 2), ("all", 50, 3), ("all", 30, 4), ("all", 0, 6)]
        assert driver.get_key_value_store("sum").get("all") == 0


def test_map_values_maps_updates_and_forwards_deletes():
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, S)).map_values(int) \
        .to_stream().to("out", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        for k, v, ts in [("A", "1", 5), ("B", "2", 25), ("C", "3", 20), ("D", "4", 10),
                         ("A", None, 30), ("X", None, 31)]:
            inp.pipe_input(k, v, ts)
        out = kvt(driver.create_output_topic("out", S, I).read_records_to_list())
    assert out == [("A", 1, 5), ("B", 2, 25), ("C", 3, 20), ("D", 4, 10), ("A", None, 30), ("X", None, 31)]


def test_materialized_map_values_store_and_chained_steps():
    builder = StreamsBuilder()
    mapped = builder.table("in", consumed=Consumed.with_(S, S)) \
        .map_values(len, materialized=Materialized.as_("lengths").with_value_serde(I))
    assert mapped.query_name == "lengths"
    mapped.filter(lambda k, v: v > 1).map_values(lambda v: v * 100).to_stream() \
        .to("out", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("a", "xx", 1)
        inp.pipe_input("b", "y", 2)
        inp.pipe_input("a", "z", 3)
        assert list(driver.get_key_value_store("lengths").all()) == [("a", 1), ("b", 1)]
        out = kvt(driver.create_output_topic("out", S, I).read_records_to_list())
    # A filtered-out row passes on as a delete, and map_values keeps it a delete; but
    # below a materialized table ("lengths") the filter knows the old row and drops the
    # delete of a row that never was ("b"), as Kafka's KTableFilter does.
    assert out == [("a", 200, 1), ("a", None, 3)]


def test_to_stream_with_key_mapper():
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, I)).to_stream(lambda k, v: k + "!") \
        .to("out", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, I)
        inp.pipe_input("a", 1, 1)
        inp.pipe_input("a", None, 2)
        assert kvt(driver.create_output_topic("out", S, I).read_records_to_list()) == [
            ("a!", 1, 1), ("a!", None, 2)]
