"""Stream–table and table–table joins through Spark (2 input partitions) give the same
results as the TopologyTestDriver."""
from __future__ import annotations

from streamlib import Materialized, Produced, Serdes, StreamsBuilder
from streamlib.topology import Topology

from both_engines import Input, assert_engines_agree, run_both
from join_helpers import tostring_joiner

S, L = Serdes.string(), Serdes.long()
CUSTOMERS = [f"c{i}" for i in range(5)]


def stream_table_topology() -> Topology:
    """Orders keyed by order id, re-keyed by customer (a repartition), joined and left-joined
    with the customers table."""
    builder = StreamsBuilder()
    customers = builder.table("customers", materialized=Materialized.as_("customers"))
    by_customer = builder.stream("orders").map(lambda order, customer: (customer, order))
    by_customer.join(customers, tostring_joiner).to("enriched", produced=Produced.with_(S, S))
    by_customer.left_join(customers, tostring_joiner).to("all-orders", produced=Produced.with_(S, S))
    return builder.build()


def stream_table_inputs() -> list[Input]:
    # the table is complete (c1 deleted, c4 never there) before any order arrives
    customers = [(c, f"name-{c}", i) for i, c in enumerate(CUSTOMERS[:4])] + [("c1", None, 50)]
    orders = [(f"o{i}", CUSTOMERS[i % 5], 100 + i) for i in range(20)]
    return [Input("customers", customers, partitions=2), Input("orders", orders, partitions=2)]


def table_table_topology() -> Topology:
    builder = StreamsBuilder()
    left = builder.table("left")
    right = builder.table("right")
    joined = left.outer_join(right, tostring_joiner, materialized=Materialized.as_("outer"))
    joined.to_stream().to("outer-out", produced=Produced.with_(S, S))
    left.join(right, tostring_joiner, materialized=Materialized.as_("inner")).to_stream().to(
        "inner-out", produced=Produced.with_(S, S))
    joined.group_by(lambda k, v: (v.split("+")[1], v)).count(materialized=Materialized.as_("by-right"))
    return builder.build()


def table_table_inputs() -> list[Input]:
    keys = [f"k{i}" for i in range(6)]
    left = [(k, f"L{i}", i) for i, k in enumerate(keys)] + [("k1", None, 20), ("k2", "L2b", 21)]
    right = [(k, f"R{i % 2}", 10 + i) for i, k in enumerate(keys[::2])] + [("k4", None, 30)]
    return [Input("left", left, partitions=2), Input("right", right, partitions=2)]


def test_stream_table_join_through_spark(spark, tmp_path):
    outputs = {"enriched": (S, S), "all-orders": (S, S)}
    driver, on_spark = run_both(spark, tmp_path, stream_table_topology, stream_table_inputs(), outputs,
                                cache_max_bytes=0)
    assert_engines_agree(driver, on_spark, outputs, every_update=True)
    assert sorted(r[:3] for r in on_spark.outputs["enriched"]) == sorted(
        (c, f"o{i}+name-{c}", 100 + i) for i in range(20) if (c := CUSTOMERS[i % 5]) not in ("c1", "c4"))
    assert len(on_spark.outputs["all-orders"]) == 20
    assert {r[3] for r in on_spark.outputs["enriched"]} == {0, 1}


def test_table_table_joins_through_spark(spark, tmp_path):
    outputs = {"outer-out": (S, S), "inner-out": (S, S)}
    driver, on_spark = run_both(spark, tmp_path, table_table_topology, table_table_inputs(), outputs,
                                cache_max_bytes=0)
    assert_engines_agree(driver, on_spark, outputs)
    assert driver.stores["inner"] == {"k0": "L0+R0", "k2": "L2b+R1"}
    assert driver.stores["outer"] == {"k0": "L0+R0", "k2": "L2b+R1", "k3": "L3+null", "k4": "L4+null",
                                      "k5": "L5+null"}
    assert {k: n for k, n in driver.stores["by-right"].items() if n} == {"R0": 1, "R1": 1, "null": 3}
