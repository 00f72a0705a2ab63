"""KTable.group_by(...).count/reduce/aggregate (after KTableAggregateTest and
KGroupedTableImplTest): a row's old value is subtracted from its old group before its
new value is added to its new group; one combined update when the group is unchanged."""
from streamlib import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder

from streams_helpers import I, L, S, driver_for, kvt

D = Serdes.double()


def _pipe(driver, records, serdes=(S, S), topic="in"):
    inp = driver.create_input_topic(topic, *serdes)
    for k, v, ts in records:
        inp.pipe_input(k, v, ts)


def count_by_value() -> StreamsBuilder:
    """A table re-grouped by its value and counted, the counts written to "out"."""
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, S)) \
        .group_by(lambda k, v: (v, v), Grouped.with_(S, S)) \
        .count(materialized=Materialized.as_("count")) \
        .to_stream().to("out", produced=Produced.with_(S, L))
    return builder


def test_aggregate_with_unchanged_group_subtracts_then_adds():
    # KTableAggregateTest#testAggBasic
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, S)) \
        .group_by(lambda k, v: (k, v), Grouped.with_(S, S)) \
        .aggregate(lambda: "0", lambda k, v, agg: f"{agg}+{v}", lambda k, v, agg: f"{agg}-{v}",
                   materialized=Materialized.as_("topic1-Canonized").with_value_serde(S)) \
        .to_stream().to("out", produced=Produced.with_(S, S))
    with driver_for(builder) as driver:
        _pipe(driver, [("A", "1", 10), ("B", "2", 15), ("A", "3", 20), ("B", "4", 18), ("C", "5", 5),
                       ("D", "6", 25), ("B", "7", 15), ("C", "8", 10)])
        out = kvt(driver.create_output_topic("out", S, S).read_records_to_list())
    assert out == [("A", "0+1", 10), ("B", "0+2", 15), ("A", "0+1-1+3", 20), ("B", "0+2-2+4", 18),
                   ("C", "0+5", 5), ("D", "0+6", 25), ("B", "0+2-2+4-4+7", 18), ("C", "0+5-5+8", 10)]


def test_count_when_rows_move_between_groups():
    # KTableAggregateTest#testCount: the old group's update comes first
    builder = count_by_value()
    with driver_for(builder) as driver:
        _pipe(driver, [("A", "green", 10), ("B", "green", 9), ("A", "blue", 12), ("C", "yellow", 15),
                       ("D", "green", 11)])
        out = kvt(driver.create_output_topic("out", S, L).read_records_to_list())
        store = driver.get_key_value_store("count")
        assert list(store.all()) == [("blue", 1), ("green", 2), ("yellow", 1)]
        assert store.get_with_timestamp("green") == (2, 12)
    assert out == [("green", 1, 10), ("green", 2, 10), ("green", 1, 12), ("blue", 1, 12),
                   ("yellow", 1, 15), ("green", 2, 12)]


def test_remove_old_before_add_new_in_the_same_group():
    # KTableAggregateTest#testRemoveOldBeforeAddNew
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, S)) \
        .group_by(lambda k, v: (k[0], k[1]), Grouped.with_(S, S)) \
        .aggregate(lambda: "", lambda k, v, agg: agg + v, lambda k, v, agg: agg.replace(v, ""),
                   materialized=Materialized.as_("someStore").with_value_serde(S)) \
        .to_stream().to("out", produced=Produced.with_(S, S))
    with driver_for(builder) as driver:
        _pipe(driver, [("11", "A", 10), ("12", "B", 8), ("11", None, 12), ("12", "C", 6)])
        out = kvt(driver.create_output_topic("out", S, S).read_records_to_list())
    assert out == [("1", "1", 10), ("1", "12", 10), ("1", "2", 12), ("1", "2", 12)]


def test_reduce_with_adder_and_subtractor_and_timestamps():
    # KGroupedTableImplTest#shouldReduce
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, D), materialized=Materialized.as_("store")) \
        .group_by(lambda k, v: (k, int(v)), Grouped.with_(S, I)) \
        .reduce(lambda a, v: a + v, lambda a, v: a - v,
                materialized=Materialized.as_("reduced").with_value_serde(I)) \
        .to_stream().to("out", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        reduced = driver.get_key_value_store("reduced")
        _pipe(driver, [("A", 1.1, 10), ("B", 2.2, 11)], serdes=(S, D))
        assert reduced.get_with_timestamp("A") == (1, 10)
        assert reduced.get_with_timestamp("B") == (2, 11)
        _pipe(driver, [("A", 2.6, 30), ("B", 1.3, 30), ("A", 5.7, 50), ("B", 6.2, 20)], serdes=(S, D))
        assert reduced.get_with_timestamp("A") == (5, 50)
        assert reduced.get_with_timestamp("B") == (6, 30)
        out = kvt(driver.create_output_topic("out", S, I).read_records_to_list())
    assert out == [("A", 1, 10), ("B", 2, 11), ("A", 2, 30), ("B", 1, 30), ("A", 5, 50), ("B", 6, 30)]


def test_count_and_aggregate_by_value_materialize_results():
    # KGroupedTableImplTest#shouldCountAndMaterializeResults / shouldAggregateAndMaterializeResults
    builder = StreamsBuilder()
    grouped = builder.table("in", consumed=Consumed.with_(S, S)).group_by(lambda k, v: (v, v), Grouped.with_(S, S))
    grouped.count(materialized=Materialized.as_("count"))
    grouped.aggregate(lambda: "0", lambda k, v, agg: f"{agg}+{v}", lambda k, v, agg: f"{agg}-{v}",
                      materialized=Materialized.as_("aggregate").with_value_serde(S))
    with driver_for(builder) as driver:
        _pipe(driver, [("A", "1", 10), ("B", "1", 50), ("C", "1", 30), ("D", "2", 40), ("E", "2", 60)])
        counts = driver.get_key_value_store("count")
        aggregate = driver.get_key_value_store("aggregate")
        assert counts.get_with_timestamp("1") == (3, 50) and counts.get_with_timestamp("2") == (2, 60)
        assert aggregate.get_with_timestamp("1") == ("0+1+1+1", 50)
        assert aggregate.get_with_timestamp("2") == ("0+2+2", 60)


def test_delete_subtracts_and_a_group_at_zero_stays_in_the_store():
    builder = count_by_value()
    with driver_for(builder) as driver:
        _pipe(driver, [("A", "x", 1), ("A", None, 2), ("B", None, 3), ("A", None, 4)])
        out = kvt(driver.create_output_topic("out", S, L).read_records_to_list())
        assert list(driver.get_key_value_store("count").all()) == [("x", 0)]
    # deletes of rows that are not there change nothing and emit nothing
    assert out == [("x", 1, 1), ("x", 0, 2)]


def test_selector_returning_null_key_or_null_value_skips_the_row():
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, S)) \
        .group_by(lambda k, v: (None if v == "nokey" else "g", None if v == "noval" else v),
                  Grouped.with_(S, S)) \
        .aggregate(lambda: "", lambda k, v, agg: agg + "+" + v, lambda k, v, agg: agg + "-" + v,
                   materialized=Materialized.as_("agg").with_value_serde(S)) \
        .to_stream().to("out", produced=Produced.with_(S, S))
    with driver_for(builder) as driver:
        _pipe(driver, [("A", "a", 1), ("A", "nokey", 2), ("B", "noval", 3), ("B", "b", 4), ("C", "noval", 5)])
        out = kvt(driver.create_output_topic("out", S, S).read_records_to_list())
        assert driver.metrics()["dropped_records"] == 1
    # A: +a, then A leaves to a null group: -a only; B: noval is skipped, then +b
    assert out == [("g", "+a", 1), ("g", "+a-a", 2), ("g", "+a-a+b", 4)]


def test_regrouping_a_stream_aggregate():
    # count per user, then how many users have each count
    builder = StreamsBuilder()
    builder.stream("clicks", consumed=Consumed.with_(S, S)).group_by_key() \
        .count(materialized=Materialized.as_("per-user")) \
        .group_by(lambda user, n: (n, user), Grouped.with_(L, S)) \
        .count(materialized=Materialized.as_("histogram").with_key_serde(L))
    topology = builder.build()
    assert len(topology.subtopologies) == 2
    with driver_for(topology) as driver:
        _pipe(driver, [("u1", "c", 1), ("u2", "c", 2), ("u1", "c", 3), ("u3", "c", 4)], topic="clicks")
        assert list(driver.get_key_value_store("histogram").all()) == [(1, 2), (2, 1)]


def test_selector_returning_none_drops_the_row_and_counts_it():
    # KTableRepartitionMap drops a row the mapper maps to no pair; it leaves its old group.
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, S)) \
        .group_by(lambda k, v: None if v == "none" else (v, v), Grouped.with_(S, S)) \
        .count(materialized=Materialized.as_("count")) \
        .to_stream().to("out", produced=Produced.with_(S, L))
    with driver_for(builder) as driver:
        _pipe(driver, [("A", "x", 1), ("B", "none", 2), ("A", "none", 3), ("C", "x", 4)])
        out = kvt(driver.create_output_topic("out", S, L).read_records_to_list())
        assert driver.metrics()["dropped_records"] == 2
        assert dict(driver.get_key_value_store("count").all()) == {"x": 1}
    assert out == [("x", 1, 1), ("x", 0, 3), ("x", 1, 4)]
