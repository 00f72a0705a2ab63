"""Kafka Streams' own unit tests for non-windowed KTables and grouped aggregations,
ported to streamlib's API with their expected outputs unchanged (records, timestamps,
store contents, order).

Sources: apache/kafka streams/src/test/java/org/apache/kafka/streams/kstream/internals/
KTableAggregateTest, KTableReduceTest, KGroupedTableImplTest, KGroupedStreamImplTest
(non-windowed methods), KTableSourceTest, KTableFilterTest, KTableMapValuesTest,
KTableImplTest and KStreamImplTest#shouldMaterializeKTableFromKStream (there is no
KStreamToTableTest in Kafka's tree; KStreamImplTest's other toTable methods are in
test_port_kstream_joins.py). Methods already ported in test_kgrouped_stream.py,
test_kgrouped_table.py, test_ktable_filter_map_values.py, test_ktable_source.py and
test_kstream_to_table_repartition.py are not repeated here.

Kafka's ``MockApiProcessorSupplier`` attached to ``table.toStream()`` sees exactly what
``table.to_stream().to(topic)`` writes, so captured records are read from output topics.
Where Kafka inspects a processor's ``Change(new, old)`` directly, only the new values
are observable through our API (``to_stream()``); those tests say so.
"""

import pytest

from streamlib import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder

from streams_helpers import I, L, S, driver_for, kvt

D = Serdes.double()
J = Serdes.json()
INVALID_STORE_NAME = "~foo bar~"  # Kafka's tests use this name: not a legal topic name


# -- Kafka's Mock* helpers, in Python ------------------------------------------------------
def string_init():
    """MockInitializer.STRING_INIT"""
    return "0"


def tostring_adder(key, value, agg):
    """MockAggregator.TOSTRING_ADDER"""
    return f"{agg}+{value}"


def tostring_remover(key, value, agg):
    """MockAggregator.TOSTRING_REMOVER"""
    return f"{agg}-{value}"


def string_adder(v1, v2):
    """MockReducer.STRING_ADDER"""
    return f"{v1}+{v2}"


def string_remover(v1, v2):
    """MockReducer.STRING_REMOVER"""
    return f"{v1}-{v2}"


def select_value(key, value):
    """MockMapper.selectValueKeyValueMapper()"""
    return (value, value)


def no_op(key, value):
    """MockMapper.noOpKeyValueMapper()"""
    return (key, value)


def is_even(key, value):
    return value % 2 == 0


def _pipe(driver, topic, records, key_serde=S, value_serde=S):
    inp = driver.create_input_topic(topic, key_serde, value_serde)
    for record in records:
        inp.pipe_input(*record)


def _out(driver, topic, key_serde=S, value_serde=S):
    return kvt(driver.create_output_topic(topic, key_serde, value_serde).read_records_to_list())


def _last_value_and_timestamp_per_key(records):
    """MockApiProcessor.lastValueAndTimestampPerKey()"""
    last = {}
    for key, value, ts in records:
        last[key] = (value, ts)
    return last


def _fails_at_call_or_build(builder, make):
    """Kafka rejects these at the DSL call (NullPointerException / TopologyException);
    a Python port may equally reject them when the topology is built (DESIGN.md:
    topology mistakes fail at build()/start()), but not only at processing time."""
    with pytest.raises(Exception):
        make()
        builder.build()


# =========================================================================================
# KTableAggregateTest
# =========================================================================================
COLOR_INPUT = [("A", "green", 10), ("B", "green", 9), ("A", "blue", 12), ("C", "yellow", 15),
               ("D", "green", 11)]
COLOR_COUNTS = [("green", 1, 10), ("green", 2, 10), ("green", 1, 12), ("blue", 1, 12),
                ("yellow", 1, 15), ("green", 2, 12)]


def test_agg_repartition():
    """KTableAggregateTest#testAggRepartition: a selector returning a null key or no pair
    skips the row; a row moving between groups is subtracted from the old group first."""
    def selector(key, value):
        if key == "null":
            return (None, value)
        if key == "NULL":
            return None
        return (value, value)

    builder = StreamsBuilder()
    builder.table("topic1", consumed=Consumed.with_(S, S)) \
        .group_by(selector, Grouped.with_(S, S)) \
        .aggregate(string_init, tostring_adder, tostring_remover,
                   materialized=Materialized.as_("topic1-Canonized").with_value_serde(S)) \
        .to_stream().to("out", produced=Produced.with_(S, S))
    with driver_for(builder) as driver:
        _pipe(driver, "topic1", [("A", "1", 10), ("A", None, 15), ("A", "1", 12), ("B", "2", 20),
                                 ("null", "3", 25), ("B", "4", 23), ("NULL", "5", 24), ("B", "7", 22)])
        out = _out(driver, "out")
    assert out == [("1", "0+1", 10), ("1", "0+1-1", 15), ("1", "0+1-1+1", 15), ("2", "0+2", 20),
                   ("2", "0+2-2", 23), ("4", "0+4", 23), ("4", "0+4-4", 23), ("7", "0+7", 22)]


def test_count_with_internal_store():
    """KTableAggregateTest#testCountWithInternalStore (testCountHelper): count() without
    a store name."""
    builder = StreamsBuilder()
    counts = builder.table("count-test-input", consumed=Consumed.with_(S, S)) \
        .group_by(select_value, Grouped.with_(S, S)).count()
    assert counts.query_name is None
    counts.to_stream().to("out", produced=Produced.with_(S, L))
    with driver_for(builder) as driver:
        _pipe(driver, "count-test-input", COLOR_INPUT)
        assert _out(driver, "out", S, L) == COLOR_COUNTS


def test_should_not_send_transient_state_if_not_upgrading():
    """KTableAggregateTest#testShouldNotSendTransientStateIfNotUpgrading: the key is not
    changed by the selector, so an update is one combined change — no transient 0."""
    builder = StreamsBuilder()
    builder.table("input-topic", consumed=Consumed.with_(S, S)) \
        .group_by(lambda k, v: (k, v), Grouped.with_(S, S)).count() \
        .to_stream().to("output-topic", produced=Produced.with_(S, L))
    with driver_for(builder) as driver:
        _pipe(driver, "input-topic", [("1", "", 8), ("1", "", 9)])
        assert _out(driver, "output-topic", S, L) == [("1", 1, 8), ("1", 1, 9)]


# =========================================================================================
# KTableReduceTest
# =========================================================================================
def test_reduce_should_add_and_subtract():
    """KTableReduceTest#shouldAddAndSubtract, through the DSL: the changes
    ({a}, null)@10, ({b}, {a})@15, (null, {b})@12 reach the reduce of group "A"; the
    adder also applies to an empty (not null) intermediate aggregate, and a subtraction
    keeps the larger timestamp. Sets are JSON lists here."""
    def union(left, right):
        assert left is not None and right is not None
        return sorted(set(left) | set(right))

    def difference(left, right):
        assert left is not None and right is not None
        return sorted(set(left) - set(right))

    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, J)) \
        .group_by(lambda k, v: ("A", v), Grouped.with_(S, J)) \
        .reduce(union, difference, materialized=Materialized.as_("myStore").with_value_serde(J))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, J)
        store = driver.get_key_value_store("myStore")
        inp.pipe_input("x", ["a"], 10)
        assert store.get_with_timestamp("A") == (["a"], 10)
        inp.pipe_input("x", ["b"], 15)
        assert store.get_with_timestamp("A") == (["b"], 15)
        inp.pipe_input("x", None, 12)
        assert store.get_with_timestamp("A") == ([], 15)


# =========================================================================================
# KGroupedTableImplTest
# =========================================================================================
def _assert_reduced(driver, out_topic="out"):
    """KGroupedTableImplTest#assertReduced: last value and timestamp per key."""
    inp = driver.create_input_topic("input", S, D)
    output = driver.create_output_topic(out_topic, S, I)
    seen = []
    inp.pipe_input("A", 1.1, 10)
    inp.pipe_input("B", 2.2, 11)
    seen += kvt(output.read_records_to_list())
    last = _last_value_and_timestamp_per_key(seen)
    assert last["A"] == (1, 10)
    assert last["B"] == (2, 11)
    inp.pipe_input("A", 2.6, 30)
    inp.pipe_input("B", 1.3, 30)
    inp.pipe_input("A", 5.7, 50)
    inp.pipe_input("B", 6.2, 20)
    seen += kvt(output.read_records_to_list())
    last = _last_value_and_timestamp_per_key(seen)
    assert last["A"] == (5, 50)
    assert last["B"] == (6, 30)


def int_projection(key, value):
    return (key, int(value))


def test_grouped_table_should_reduce_with_internal_store_name():
    """KGroupedTableImplTest#shouldReduceWithInternalStoreName"""
    builder = StreamsBuilder()
    reduced = builder.table("input", consumed=Consumed.with_(S, D),
                            materialized=Materialized.as_("store").with_key_serde(S).with_value_serde(D)) \
        .group_by(int_projection, Grouped.with_(S, I)) \
        .reduce(lambda a, b: a + b, lambda a, b: a - b)
    reduced.to_stream().to("out", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        _assert_reduced(driver)
    assert reduced.query_name is None


def test_grouped_table_should_reduce_and_materialize_results():
    """KGroupedTableImplTest#shouldReduceAndMaterializeResults"""
    builder = StreamsBuilder()
    reduced = builder.table("input", consumed=Consumed.with_(S, D)) \
        .group_by(int_projection, Grouped.with_(S, I)) \
        .reduce(lambda a, b: a + b, lambda a, b: a - b,
                materialized=Materialized.as_("reduce").with_key_serde(S).with_value_serde(I))
    reduced.to_stream().to("out", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        _assert_reduced(driver)
        store = driver.get_key_value_store("reduce")
        assert store.get("A") == 5
        assert store.get("B") == 6
        assert store.get_with_timestamp("A") == (5, 50)
        assert store.get_with_timestamp("B") == (6, 30)


def _grouped_table():
    builder = StreamsBuilder()
    return builder, builder.table("blah", consumed=Consumed.with_(S, S)).group_by(select_value)


@pytest.mark.parametrize("case", [
    "shouldNotAllowInvalidStoreNameOnAggregate",
    "shouldNotAllowNullInitializerOnAggregate / shouldThrowNullPointerOnAggregateWhenInitializerIsNull",
    "shouldNotAllowNullAdderOnAggregate / shouldThrowNullPointerOnAggregateWhenAdderIsNull",
    "shouldNotAllowNullSubtractorOnAggregate / shouldThrowNullPointerOnAggregateWhenSubtractorIsNull",
    "shouldNotAllowNullAdderOnReduce / shouldThrowNullPointerOnReduceWhenAdderIsNull",
    "shouldNotAllowNullSubtractorOnReduce / shouldThrowNullPointerOnReduceWhenSubtractorIsNull",
    "shouldNotAllowInvalidStoreNameOnReduce",
])
def test_grouped_table_rejects_invalid_arguments(case):
    """KGroupedTableImplTest#shouldNotAllowInvalidStoreNameOnAggregate,
    #shouldNotAllowNullInitializerOnAggregate, #shouldNotAllowNullAdderOnAggregate,
    #shouldNotAllowNullSubtractorOnAggregate, #shouldNotAllowNullAdderOnReduce,
    #shouldNotAllowNullSubtractorOnReduce, #shouldNotAllowInvalidStoreNameOnReduce and
    their #shouldThrowNullPointerOn...WhenXIsNull twins."""
    builder, grouped = _grouped_table()
    make = {
        "shouldNotAllowInvalidStoreNameOnAggregate": lambda: grouped.aggregate(
            string_init, tostring_adder, tostring_remover, materialized=Materialized.as_(INVALID_STORE_NAME)),
        "shouldNotAllowNullInitializerOnAggregate": lambda: grouped.aggregate(
            None, tostring_adder, tostring_remover, materialized=Materialized.as_("store")),
        "shouldNotAllowNullAdderOnAggregate": lambda: grouped.aggregate(
            string_init, None, tostring_remover, materialized=Materialized.as_("store")),
        "shouldNotAllowNullSubtractorOnAggregate": lambda: grouped.aggregate(
            string_init, tostring_adder, None, materialized=Materialized.as_("store")),
        "shouldNotAllowNullAdderOnReduce": lambda: grouped.reduce(
            None, string_remover, materialized=Materialized.as_("store")),
        "shouldNotAllowNullSubtractorOnReduce": lambda: grouped.reduce(
            string_adder, None, materialized=Materialized.as_("store")),
        "shouldNotAllowInvalidStoreNameOnReduce": lambda: grouped.reduce(
            string_adder, string_remover, materialized=Materialized.as_(INVALID_STORE_NAME)),
    }[case.split(" / ")[0]]
    _fails_at_call_or_build(builder, make)


# =========================================================================================
# KGroupedStreamImplTest (non-windowed methods)
# =========================================================================================
def _grouped_stream():
    builder = StreamsBuilder()
    grouped = builder.stream("topic", consumed=Consumed.with_(S, S)).group_by_key(Grouped.with_(S, S))
    return builder, grouped


def _process_data(driver):
    """KGroupedStreamImplTest#processData"""
    _pipe(driver, "topic", [("1", "A", 5), ("2", "B", 1), ("1", "C", 3), ("1", "D", 10),
                            ("3", "E", 8), ("3", "F", 9), ("3", None)])


def test_grouped_stream_should_count_and_materialize_results():
    """KGroupedStreamImplTest#shouldCountAndMaterializeResults"""
    builder, grouped = _grouped_stream()
    grouped.count(materialized=Materialized.as_("count").with_key_serde(S))
    with driver_for(builder) as driver:
        _process_data(driver)
        count = driver.get_key_value_store("count")
        assert (count.get("1"), count.get("2"), count.get("3")) == (3, 1, 2)
        assert count.get_with_timestamp("1") == (3, 10)
        assert count.get_with_timestamp("2") == (1, 1)
        assert count.get_with_timestamp("3") == (2, 9)


def test_grouped_stream_should_reduce_and_materialize_results():
    """KGroupedStreamImplTest#shouldReduceAndMaterializeResults"""
    builder, grouped = _grouped_stream()
    grouped.reduce(string_adder, materialized=Materialized.as_("reduce").with_key_serde(S).with_value_serde(S))
    with driver_for(builder) as driver:
        _process_data(driver)
        reduced = driver.get_key_value_store("reduce")
        assert (reduced.get("1"), reduced.get("2"), reduced.get("3")) == ("A+C+D", "B", "E+F")
        assert reduced.get_with_timestamp("1") == ("A+C+D", 10)
        assert reduced.get_with_timestamp("2") == ("B", 1)
        assert reduced.get_with_timestamp("3") == ("E+F", 9)


def test_grouped_stream_should_aggregate_and_materialize_results():
    """KGroupedStreamImplTest#shouldAggregateAndMaterializeResults"""
    builder, grouped = _grouped_stream()
    grouped.aggregate(string_init, tostring_adder,
                      materialized=Materialized.as_("aggregate").with_key_serde(S).with_value_serde(S))
    with driver_for(builder) as driver:
        _process_data(driver)
        aggregate = driver.get_key_value_store("aggregate")
        assert (aggregate.get("1"), aggregate.get("2"), aggregate.get("3")) == ("0+A+C+D", "0+B", "0+E+F")
        assert aggregate.get_with_timestamp("1") == ("0+A+C+D", 10)
        assert aggregate.get_with_timestamp("2") == ("0+B", 1)
        assert aggregate.get_with_timestamp("3") == ("0+E+F", 9)


def test_grouped_stream_should_aggregate_with_default_serdes():
    """KGroupedStreamImplTest#shouldAggregateWithDefaultSerdes (default serdes String)"""
    builder, grouped = _grouped_stream()
    grouped.aggregate(string_init, tostring_adder).to_stream().to("out")
    with driver_for(builder) as driver:
        _process_data(driver)
        last = _last_value_and_timestamp_per_key(_out(driver, "out"))
    assert last["1"] == ("0+A+C+D", 10)
    assert last["2"] == ("0+B", 1)
    assert last["3"] == ("0+E+F", 9)


@pytest.mark.parametrize("op", ["aggregate", "reduce"])
def test_grouped_stream_should_measure_skips(op):
    """KGroupedStreamImplTest#shouldLogAndMeasureSkipsInAggregate and
    #shouldLogAndMeasureSkipsInReduce: the null-value record (offset 6) is skipped and
    measured (the log line's wording is not part of our API)."""
    builder, grouped = _grouped_stream()
    if op == "aggregate":
        grouped.count(materialized=Materialized.as_("count").with_key_serde(S))
    else:
        grouped.reduce(string_adder, materialized=Materialized.as_("reduce").with_key_serde(S).with_value_serde(S))
    with driver_for(builder) as driver:
        _process_data(driver)
        assert driver.metrics()["dropped_records"] == 1


@pytest.mark.parametrize("case", [
    "shouldNotHaveNullReducerOnReduce",
    "shouldNotHaveInvalidStoreNameOnReduce",
    "shouldNotHaveNullInitializerOnAggregate",
    "shouldNotHaveNullAdderOnAggregate",
    "shouldNotHaveInvalidStoreNameOnAggregate",
])
def test_grouped_stream_rejects_invalid_arguments(case):
    """KGroupedStreamImplTest#shouldNotHaveNullReducerOnReduce,
    #shouldNotHaveInvalidStoreNameOnReduce, #shouldNotHaveNullInitializerOnAggregate,
    #shouldNotHaveNullAdderOnAggregate, #shouldNotHaveInvalidStoreNameOnAggregate."""
    builder, grouped = _grouped_stream()
    make = {
        "shouldNotHaveNullReducerOnReduce": lambda: grouped.reduce(None),
        "shouldNotHaveInvalidStoreNameOnReduce": lambda: grouped.reduce(
            string_adder, materialized=Materialized.as_(INVALID_STORE_NAME)),
        "shouldNotHaveNullInitializerOnAggregate": lambda: grouped.aggregate(
            None, tostring_adder, materialized=Materialized.as_("store")),
        "shouldNotHaveNullAdderOnAggregate": lambda: grouped.aggregate(
            string_init, None, materialized=Materialized.as_("store")),
        "shouldNotHaveInvalidStoreNameOnAggregate": lambda: grouped.aggregate(
            string_init, tostring_adder, materialized=Materialized.as_(INVALID_STORE_NAME)),
    }[case]
    _fails_at_call_or_build(builder, make)


# =========================================================================================
# KTableSourceTest
# =========================================================================================
def test_source_value_getter():
    """KTableSourceTest#testValueGetter, read through the source table's store: every
    update replaces the row, out-of-order ones included; deletes remove it."""
    builder = StreamsBuilder()
    builder.table("topic1", consumed=Consumed.with_(S, S), materialized=Materialized.as_("store"))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic1", S, S)
        getter = driver.get_key_value_store("store").get_with_timestamp
        inp.pipe_input("A", "01", 10)
        inp.pipe_input("B", "01", 20)
        inp.pipe_input("C", "01", 15)
        assert (getter("A"), getter("B"), getter("C")) == (("01", 10), ("01", 20), ("01", 15))
        inp.pipe_input("A", "02", 30)
        inp.pipe_input("B", "02", 5)
        assert (getter("A"), getter("B"), getter("C")) == (("02", 30), ("02", 5), ("01", 15))
        inp.pipe_input("A", "03", 29)
        assert (getter("A"), getter("B"), getter("C")) == (("03", 29), ("02", 5), ("01", 15))
        inp.pipe_input("A", None, 50)
        inp.pipe_input("B", None, 3)
        assert (getter("A"), getter("B"), getter("C")) == (None, None, ("01", 15))


# =========================================================================================
# KTableFilterTest
# =========================================================================================
def _skip_null_on_materialization(materialize_filter):
    """KTableFilterTest#doTestSkipNullOnMaterialization with shouldSkip = true: table1's
    changes are all forwarded, the filter (whose old values a downstream group_by needs)
    forwards nothing for rows that never matched."""
    builder = StreamsBuilder()
    table1 = builder.table("topic1", consumed=Consumed.with_(S, S))
    table2 = table1.filter(lambda k, v: v.lower() == "accept",
                           materialized=Materialized.as_("store2") if materialize_filter else None)
    table2.group_by(no_op).reduce(string_adder, string_remover,
                                  materialized=Materialized.as_("mock-result") if materialize_filter else None)
    table1.to_stream().to("proc1", produced=Produced.with_(S, S))
    table2.to_stream().to("proc2", produced=Produced.with_(S, S))
    with driver_for(builder) as driver:
        _pipe(driver, "topic1", [("A", "reject", 5), ("B", "reject", 10), ("C", "reject", 20)])
        assert _out(driver, "proc1") == [("A", "reject", 5), ("B", "reject", 10), ("C", "reject", 20)]
        assert _out(driver, "proc2") == []


def test_filter_should_skip_null_to_repartition_without_materialization():
    """KTableFilterTest#shouldSkipNullToRepartitionWithoutMaterialization"""
    _skip_null_on_materialization(False)


def test_filter_should_skip_null_to_repartition_on_materialization():
    """KTableFilterTest#shouldSkipNullToRepartitionOnMaterialization"""
    _skip_null_on_materialization(True)


def _sending_old_value(source_materialized, filter_materialized, downstream_group_by):
    """KTableFilterTest#doTestSendingOldValue, new values only (through to_stream): when
    the filter sends old values it forwards nothing for a change from no row to no row."""
    builder = StreamsBuilder()
    table1 = builder.table("topic1", consumed=Consumed.with_(S, I),
                           materialized=Materialized.as_("store1") if source_materialized else None)
    table2 = table1.filter(is_even, materialized=Materialized.as_("store2") if filter_materialized else None)
    if downstream_group_by:  # what forces sendOldValues in the DSL (KTableImpl#groupBy)
        table2.group_by(no_op, Grouped.with_(S, I)).reduce(lambda a, b: a + b, lambda a, b: a - b)
    table1.to_stream().to("proc1", produced=Produced.with_(S, I))
    table2.to_stream().to("proc2", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic1", S, I)
        proc1 = driver.create_output_topic("proc1", S, I)
        proc2 = driver.create_output_topic("proc2", S, I)
        inp.pipe_input("A", 1, 5)
        inp.pipe_input("B", 1, 10)
        inp.pipe_input("C", 1, 15)
        assert kvt(proc1.read_records_to_list()) == [("A", 1, 5), ("B", 1, 10), ("C", 1, 15)]
        assert proc2.is_empty()
        inp.pipe_input("A", 2, 15)
        inp.pipe_input("B", 2, 8)
        assert kvt(proc1.read_records_to_list()) == [("A", 2, 15), ("B", 2, 8)]
        assert kvt(proc2.read_records_to_list()) == [("A", 2, 15), ("B", 2, 8)]
        inp.pipe_input("A", 3, 20)
        assert kvt(proc1.read_records_to_list()) == [("A", 3, 20)]
        assert kvt(proc2.read_records_to_list()) == [("A", None, 20)]
        inp.pipe_input("A", None, 10)
        inp.pipe_input("B", None, 20)
        assert kvt(proc1.read_records_to_list()) == [("A", None, 10), ("B", None, 20)]
        assert kvt(proc2.read_records_to_list()) == [("B", None, 20)]


@pytest.mark.parametrize("case", [
    "shouldNotSendOldValuesWithoutMaterialization",
    "shouldNotSendOldValuesOnMaterialization",
    "shouldNotEnableSendingOldValuesIfNotAlreadyMaterializedAndNotForcedToMaterialize",
])
def test_filter_not_sending_old_values(case):
    """KTableFilterTest#shouldNotSendOldValuesWithoutMaterialization,
    #shouldNotSendOldValuesOnMaterialization and
    #shouldNotEnableSendingOldValuesIfNotAlreadyMaterializedAndNotForcedToMaterialize
    (doTestNotSendingOldValue), new values only (through to_stream): without old values
    the filter forwards a delete for every row that does not match."""
    builder = StreamsBuilder()
    table1 = builder.table("topic1", consumed=Consumed.with_(S, I))
    materialized = Materialized.as_("store2") if case == "shouldNotSendOldValuesOnMaterialization" else None
    table2 = table1.filter(is_even, materialized=materialized)
    table1.to_stream().to("proc1", produced=Produced.with_(S, I))
    table2.to_stream().to("proc2", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic1", S, I)
        proc1 = driver.create_output_topic("proc1", S, I)
        proc2 = driver.create_output_topic("proc2", S, I)
        inp.pipe_input("A", 1, 5)
        inp.pipe_input("B", 1, 10)
        inp.pipe_input("C", 1, 15)
        assert kvt(proc1.read_records_to_list()) == [("A", 1, 5), ("B", 1, 10), ("C", 1, 15)]
        assert kvt(proc2.read_records_to_list()) == [("A", None, 5), ("B", None, 10), ("C", None, 15)]
        inp.pipe_input("A", 2, 15)
        inp.pipe_input("B", 2, 8)
        assert kvt(proc1.read_records_to_list()) == [("A", 2, 15), ("B", 2, 8)]
        assert kvt(proc2.read_records_to_list()) == [("A", 2, 15), ("B", 2, 8)]
        inp.pipe_input("A", 3, 20)
        assert kvt(proc1.read_records_to_list()) == [("A", 3, 20)]
        assert kvt(proc2.read_records_to_list()) == [("A", None, 20)]
        inp.pipe_input("A", None, 10)
        inp.pipe_input("B", None, 20)
        assert kvt(proc1.read_records_to_list()) == [("A", None, 10), ("B", None, 20)]
        assert kvt(proc2.read_records_to_list()) == [("A", None, 10), ("B", None, 20)]


def test_filter_should_enable_send_old_values_when_not_materialized_already_but_forced_to_materialize():
    """KTableFilterTest#shouldEnableSendOldValuesWhenNotMaterializedAlreadyButForcedToMaterialize
    (forced by a downstream group_by, the DSL's way of calling enableSendingOldValues(true))."""
    _sending_old_value(source_materialized=False, filter_materialized=False, downstream_group_by=True)


def test_filter_should_enable_send_old_values_when_materialized_already_and_forced_to_materialize():
    """KTableFilterTest#shouldEnableSendOldValuesWhenMaterializedAlreadyAndForcedToMaterialize
    (forced by a downstream group_by)."""
    _sending_old_value(source_materialized=False, filter_materialized=True, downstream_group_by=True)


def test_filter_should_send_old_values_when_enabled_on_upstream_materialization():
    """KTableFilterTest#shouldSendOldValuesWhenEnabledOnUpStreamMaterialization: the source
    table is materialized, so the filter sends old values (KTableFilter's constructor
    calls parent.enableSendingOldValues(false), true for a materialized source) without
    any downstream operator asking for them."""
    _sending_old_value(source_materialized=True, filter_materialized=False, downstream_group_by=False)


# =========================================================================================
# KTableMapValuesTest
# =========================================================================================
def _map_values_ktable(materialized):
    """KTableMapValuesTest#doTestKTable"""
    builder = StreamsBuilder()
    table2 = builder.table("topic1", consumed=Consumed.with_(S, S)) \
        .map_values(lambda v: ord(v[0]) - 48, materialized=materialized)
    table2.to_stream().to("out", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        _pipe(driver, "topic1", [("A", "1", 5), ("B", "2", 25), ("C", "3", 20), ("D", "4", 10)])
        assert _out(driver, "out", S, I) == [("A", 1, 5), ("B", 2, 25), ("C", 3, 20), ("D", 4, 10)]


def test_map_values_ktable():
    """KTableMapValuesTest#testKTable"""
    _map_values_ktable(None)


def test_map_values_queryable_ktable():
    """KTableMapValuesTest#testQueryableKTable"""
    _map_values_ktable(Materialized.as_("anyName").with_value_serde(I))


def test_map_values_queryable_value_getter():
    """KTableMapValuesTest#testQueryableValueGetter (doTestValueGetter), read through the
    two materialized map_values stores."""
    builder = StreamsBuilder()
    table1 = builder.table("topic1", consumed=Consumed.with_(S, S))
    table2 = table1.map_values(int, materialized=Materialized.as_("store2").with_value_serde(I))
    table3 = table1.map_values(lambda v: int(v) * -1, materialized=Materialized.as_("store3").with_value_serde(I))
    table4 = table1.map_values(int)
    assert table2.query_name == "store2"
    assert table3.query_name == "store3"
    assert table4.query_name is None
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic1", S, S)
        get2 = driver.get_key_value_store("store2").get_with_timestamp
        get3 = driver.get_key_value_store("store3").get_with_timestamp

        inp.pipe_input("A", "01", 50)
        inp.pipe_input("B", "01", 10)
        inp.pipe_input("C", "01", 30)
        assert (get2("A"), get2("B"), get2("C")) == ((1, 50), (1, 10), (1, 30))
        assert (get3("A"), get3("B"), get3("C")) == ((-1, 50), (-1, 10), (-1, 30))

        inp.pipe_input("A", "02", 25)
        inp.pipe_input("B", "02", 20)
        assert (get2("A"), get2("B"), get2("C")) == ((2, 25), (2, 20), (1, 30))
        assert (get3("A"), get3("B"), get3("C")) == ((-2, 25), (-2, 20), (-1, 30))

        inp.pipe_input("A", "03", 35)
        assert (get2("A"), get2("B"), get2("C")) == ((3, 35), (2, 20), (1, 30))
        assert (get3("A"), get3("B"), get3("C")) == ((-3, 35), (-2, 20), (-1, 30))

        inp.pipe_input("A", None, 1)
        assert (get2("A"), get2("B"), get2("C")) == (None, (2, 20), (1, 30))
        assert (get3("A"), get3("B"), get3("C")) == (None, (-2, 20), (-1, 30))


def test_map_values_not_sending_old_value():
    """KTableMapValuesTest#testNotSendingOldValue, new values only (through to_stream)."""
    builder = StreamsBuilder()
    builder.table("topic1", consumed=Consumed.with_(S, S)).map_values(int) \
        .to_stream().to("proc", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic1", S, S)
        proc = driver.create_output_topic("proc", S, I)
        inp.pipe_input("A", "01", 5)
        inp.pipe_input("B", "01", 10)
        inp.pipe_input("C", "01", 15)
        assert kvt(proc.read_records_to_list()) == [("A", 1, 5), ("B", 1, 10), ("C", 1, 15)]
        inp.pipe_input("A", "02", 10)
        inp.pipe_input("B", "02", 8)
        assert kvt(proc.read_records_to_list()) == [("A", 2, 10), ("B", 2, 8)]
        inp.pipe_input("A", "03", 20)
        assert kvt(proc.read_records_to_list()) == [("A", 3, 20)]
        inp.pipe_input("A", None, 30)
        assert kvt(proc.read_records_to_list()) == [("A", None, 30)]


@pytest.mark.parametrize("materialize_map_values", [False, True])
def test_map_values_sending_old_values(materialize_map_values):
    """KTableMapValuesTest#shouldEnableSendingOldValuesOnParentIfMapValuesNotMaterialized and
    #shouldNotEnableSendingOldValuesOnParentIfMapValuesMaterialized (testSendingOldValues),
    adapted: old values are forced by a downstream group_by (as in the DSL) and observed
    through its subtractor. Kafka's changes A (1,null)@5, B (1,null)@10, C (1,null)@15,
    A (2,1)@10, B (2,1)@8, A (3,2)@20, A (null,3)@30 reach a same-key aggregate whose
    adder appends "+new" and subtractor "-old" (KTableAggregate: subtract, then add;
    timestamp the larger of the record's and the aggregate's)."""
    builder = StreamsBuilder()
    materialized = Materialized.as_("bob").with_value_serde(I) if materialize_map_values else None
    builder.table("topic1", consumed=Consumed.with_(S, S)) \
        .map_values(int, materialized=materialized) \
        .group_by(no_op, Grouped.with_(S, I)) \
        .aggregate(string_init, tostring_adder, tostring_remover,
                   materialized=Materialized.as_("agg").with_value_serde(S)) \
        .to_stream().to("proc", produced=Produced.with_(S, S))
    with driver_for(builder) as driver:
        _pipe(driver, "topic1", [("A", "01", 5), ("B", "01", 10), ("C", "01", 15), ("A", "02", 10),
                                 ("B", "02", 8), ("A", "03", 20), ("A", None, 30)])
        assert _out(driver, "proc") == [
            ("A", "0+1", 5), ("B", "0+1", 10), ("C", "0+1", 15), ("A", "0+1-1+2", 10),
            ("B", "0+1-1+2", 10), ("A", "0+1-1+2-2+3", 20), ("A", "0+1-1+2-2+3-3", 30)]


# =========================================================================================
# KTableImplTest
# =========================================================================================
KTABLE_IMPL_INPUT = [("A", "01", 5), ("B", "02", 100), ("C", "03", 0), ("D", "04", 0),
                     ("A", "05", 10), ("A", "06", 8)]


def _ktable_impl(source_materialized):
    builder = StreamsBuilder()
    table1 = builder.table("topic1", consumed=Consumed.with_(S, S),
                           materialized=Materialized.as_("fred") if source_materialized else None)
    table1.to_stream().to("proc0", produced=Produced.with_(S, S))
    table2 = table1.map_values(int)
    table2.to_stream().to("proc1", produced=Produced.with_(S, I))
    table3 = table2.filter(is_even)
    table3.to_stream().to("proc2", produced=Produced.with_(S, I))
    table1.to_stream().to("topic2", produced=Produced.with_(S, S))
    table4 = builder.table("topic2", consumed=Consumed.with_(S, S))
    table4.to_stream().to("proc3", produced=Produced.with_(S, S))
    with driver_for(builder) as driver:
        _pipe(driver, "topic1", KTABLE_IMPL_INPUT)
        return (_out(driver, "proc0"), _out(driver, "proc1", S, I), _out(driver, "proc2", S, I),
                _out(driver, "proc3"))


def test_ktable_impl_ktable():
    """KTableImplTest#testKTable: source -> map_values -> filter (nothing materialized:
    the filter forwards a delete for every row that does not match), and a table read
    back from the topic the source table was written to."""
    proc0, proc1, proc2, proc3 = _ktable_impl(source_materialized=False)
    assert proc0 == KTABLE_IMPL_INPUT
    assert proc1 == [("A", 1, 5), ("B", 2, 100), ("C", 3, 0), ("D", 4, 0), ("A", 5, 10), ("A", 6, 8)]
    assert proc2 == [("A", None, 5), ("B", 2, 100), ("C", None, 0), ("D", 4, 0), ("A", None, 10), ("A", 6, 8)]
    assert proc3 == KTABLE_IMPL_INPUT


def test_ktable_impl_materialized_ktable():
    """KTableImplTest#testMaterializedKTable: with the source table materialized ("fred"),
    the filter below map_values sends old values and forwards no delete for a row that
    did not match before and does not match now."""
    proc0, proc1, proc2, proc3 = _ktable_impl(source_materialized=True)
    assert proc0 == KTABLE_IMPL_INPUT
    assert proc1 == [("A", 1, 5), ("B", 2, 100), ("C", 3, 0), ("D", 4, 0), ("A", 5, 10), ("A", 6, 8)]
    assert proc2 == [("B", 2, 100), ("D", 4, 0), ("A", 6, 8)]
    assert proc3 == KTABLE_IMPL_INPUT


@pytest.mark.parametrize("case", [
    "shouldNotAllowNullPredicateOnFilter",
    "shouldNotAllowNullPredicateOnFilterNot",
    "shouldNotAllowNullMapperOnMapValues",
    "shouldNotAllowNullSelectorOnGroupBy",
])
def test_ktable_rejects_null_functions(case):
    """KTableImplTest#shouldNotAllowNullPredicateOnFilter, #shouldNotAllowNullPredicateOnFilterNot,
    #shouldNotAllowNullMapperOnMapValues, #shouldNotAllowNullSelectorOnGroupBy."""
    builder = StreamsBuilder()
    table = builder.table("test")
    make = {
        "shouldNotAllowNullPredicateOnFilter": lambda: table.filter(None).to_stream().to("out"),
        "shouldNotAllowNullPredicateOnFilterNot": lambda: table.filter_not(None).to_stream().to("out"),
        "shouldNotAllowNullMapperOnMapValues": lambda: table.map_values(None).to_stream().to("out"),
        "shouldNotAllowNullSelectorOnGroupBy": lambda: table.group_by(None).count(),
    }[case]
    _fails_at_call_or_build(builder, make)


# =========================================================================================
# KStreamImplTest: toTable
# =========================================================================================
# (shouldNotMaterializedKTableFromKStream, shouldSupportKeyChangeKTableFromKStream,
# shouldSupportGroupByCountWithKStreamToKTable, shouldSupportTriggerMaterializedWithKTableFromKStream
# and the join ones are ported in test_port_kstream_joins.py.)
def test_to_table_materialized():
    """KStreamImplTest#shouldMaterializeKTableFromKStream (the store; the topology
    description string is not ported)."""
    builder = StreamsBuilder()
    builder.stream("input", consumed=Consumed.with_(S, S)).to_table(Materialized.as_("store"))
    with driver_for(builder) as driver:
        _pipe(driver, "input", [("A", "01"), ("B", "02"), ("A", "03")])
        assert dict(driver.get_key_value_store("store").all()) == {"A": "03", "B": "02"}
