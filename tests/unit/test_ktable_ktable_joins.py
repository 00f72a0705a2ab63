"""Table–table joins, ported from Kafka Streams' KTableKTableInnerJoinTest,
KTableKTableLeftJoinTest and KTableKTableOuterJoinTest (TopologyTestDriver)."""
from __future__ import annotations

import pytest

from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder

from join_helpers import tostring_joiner
from streams_helpers import I, S, driver_for, kvt

CONSUMED = Consumed.with_(I, S)
KEYS = (0, 1, 2, 3)

#: Kafka's testNotSendingOldValue(s) input: (topic, [(key, value, timestamp)]), one step each
STEPS = [
    ("topic1", [(0, "X0", 5), (1, "X1", 6), (None, "SomeVal", 42)]),
    ("topic2", [(0, "Y0", 0), (1, "Y1", 10), (None, "AnotherVal", 73)]),
    ("topic1", [(k, f"XX{k}", 7) for k in KEYS]),
    ("topic2", [(k, f"YY{k}", k * 5) for k in KEYS]),
    ("topic1", [(k, f"XXX{k}", 6) for k in KEYS]),
    ("topic2", [(0, None, 5), (1, None, 7)]),
    ("topic1", [(k, f"XXXX{k}", 13) for k in KEYS]),
    ("topic1", [(0, None, 0), (1, None, 42), (2, None, 5), (3, None, 20)]),
]

#: The output after each step (key, value, timestamp), shared by all three joins where equal.
_BOTH_MATCHED = [
    [(0, "XX0+YY0", 7), (1, "XX1+YY1", 7), (2, "XX2+YY2", 10), (3, "XX3+YY3", 15)],
    [(0, "XXX0+YY0", 6), (1, "XXX1+YY1", 6), (2, "XXX2+YY2", 10), (3, "XXX3+YY3", 15)],
]
EXPECTED = {
    "inner": [
        [],
        [(0, "X0+Y0", 5), (1, "X1+Y1", 10)],
        [(0, "XX0+Y0", 7), (1, "XX1+Y1", 10)],
        *_BOTH_MATCHED,
        [(0, None, 6), (1, None, 7)],
        [(2, "XXXX2+YY2", 13), (3, "XXXX3+YY3", 15)],
        [(2, None, 10), (3, None, 20)],
    ],
    "left": [
        [(0, "X0+null", 5), (1, "X1+null", 6)],
        [(0, "X0+Y0", 5), (1, "X1+Y1", 10)],
        [(0, "XX0+Y0", 7), (1, "XX1+Y1", 10), (2, "XX2+null", 7), (3, "XX3+null", 7)],
        *_BOTH_MATCHED,
        [(0, "XXX0+null", 6), (1, "XXX1+null", 7)],
        [(0, "XXXX0+null", 13), (1, "XXXX1+null", 13), (2, "XXXX2+YY2", 13), (3, "XXXX3+YY3", 15)],
        [(0, None, 0), (1, None, 42), (2, None, 10), (3, None, 20)],
    ],
}
EXPECTED["outer"] = EXPECTED["left"][:-1] + [
    [(0, None, 0), (1, None, 42), (2, "null+YY2", 10), (3, "null+YY3", 20)]]

KAFKA_TEST = {"inner": "KTableKTableInnerJoinTest", "left": "KTableKTableLeftJoinTest",
              "outer": "KTableKTableOuterJoinTest"}


def _join(table1, table2, how, **kwargs):
    return getattr(table1, {"inner": "join", "left": "left_join", "outer": "outer_join"}[how])(
        table2, tostring_joiner, **kwargs)


def _builder(how, materialized=None):
    builder = StreamsBuilder()
    table1 = builder.table("topic1", consumed=CONSUMED)
    table2 = builder.table("topic2", consumed=CONSUMED)
    joined = _join(table1, table2, how, materialized=materialized)
    joined.to_stream().to("output", produced=Produced.with_(I, S))
    return builder, joined


def _run_steps(driver, steps=STEPS):
    inputs = {t: driver.create_input_topic(t, I, S) for t in ("topic1", "topic2")}
    out = driver.create_output_topic("output", I, S)
    for topic, records in steps:
        for key, value, ts in records:
            inputs[topic].pipe_input(key, value, ts)
        yield kvt(out.read_records_to_list())


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_not_sending_old_values(how):
    """testNotSendingOldValue(s) of KTableKTableInnerJoinTest / LeftJoinTest / OuterJoinTest:
    each change of either side re-joins its key; the result's timestamp is the larger of both
    rows'; a key that loses its match is deleted (inner: a delete on either side; left: a
    delete of the left row; outer: only when both rows are gone); None keys are dropped."""
    builder, _ = _builder(how)
    with driver_for(builder) as driver:
        assert list(_run_steps(driver)) == EXPECTED[how], KAFKA_TEST[how]
        assert driver.metrics()["dropped_records"] == 2


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_join_materialized_is_queryable(how):
    """testJoin of the three Kafka tests (materialized as a queryable store): the store holds the
    current join result per key, deleted rows gone."""
    builder, joined = _builder(how, Materialized.as_("joined-store").with_value_serde(S))
    assert joined.query_name == "joined-store"
    with driver_for(builder) as driver:
        steps = list(_run_steps(driver, STEPS[:7]))
        assert steps == EXPECTED[how][:7]
        store = driver.get_key_value_store("joined-store")
        expected = {"inner": [(2, "XXXX2+YY2"), (3, "XXXX3+YY3")],
                    "left": [(0, "XXXX0+null"), (1, "XXXX1+null"), (2, "XXXX2+YY2"), (3, "XXXX3+YY3")]}
        expected["outer"] = expected["left"]
        assert sorted(store.all()) == expected[how]
        assert store.get(0) == dict(expected[how]).get(0)


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_sending_old_values_to_a_regrouping(how):
    """testSendingOldValue(s) of the three Kafka tests, observed downstream: the join's old
    values flow into a re-grouping, so a count of all joined rows subtracts rows that change
    or disappear and always equals the number of rows in the join result."""
    builder = StreamsBuilder()
    table1 = builder.table("topic1", consumed=CONSUMED)
    table2 = builder.table("topic2", consumed=CONSUMED)
    joined = _join(table1, table2, how, materialized=Materialized.as_("rows").with_value_serde(S))
    (joined.group_by(lambda k, v: ("all", v)).count(materialized=Materialized.as_("row-count"))
     .to_stream().to("counts", produced=Produced.with_(S, Serdes.long())))
    live = {"inner": [0, 2, 2, 4, 4, 2, 2, 0], "left": [2, 2, 4, 4, 4, 4, 4, 0],
            "outer": [2, 2, 4, 4, 4, 4, 4, 2]}[how]
    with driver_for(builder) as driver:
        counts = driver.create_output_topic("counts", S, Serdes.long())
        rows = driver.get_key_value_store("rows")
        for (_, step), expected_rows in zip(zip(STEPS, _run_steps(driver)), live):
            assert len(list(rows.all())) == expected_rows
            values = counts.read_values_to_list()
            final = values[-1] if values else driver.get_key_value_store("row-count").get("all")
            assert (final or 0) == expected_rows


def test_join_of_a_join_and_a_filtered_table():
    """A join result and a filtered table (neither materialized) are joined again: each gets a
    store for the lookups, and results match joining the current rows."""
    builder = StreamsBuilder()
    t1 = builder.table("topic1", consumed=CONSUMED)
    t2 = builder.table("topic2", consumed=CONSUMED)
    t3 = builder.table("topic3", consumed=CONSUMED).filter(lambda k, v: v != "skip")
    t1.join(t2, tostring_joiner).join(t3, tostring_joiner).to_stream().to(
        "output", produced=Produced.with_(I, S))
    with driver_for(builder) as driver:
        i1, i2, i3 = (driver.create_input_topic(t, I, S) for t in ("topic1", "topic2", "topic3"))
        out = driver.create_output_topic("output", I, S)
        i3.pipe_input(1, "Z1", 1)
        i1.pipe_input(1, "X1", 2)
        assert out.is_empty()
        i2.pipe_input(1, "Y1", 3)
        assert kvt(out.read_records_to_list()) == [(1, "X1+Y1+Z1", 3)]
        i3.pipe_input(1, "skip", 9)
        assert kvt(out.read_records_to_list()) == [(1, None, 9)]
