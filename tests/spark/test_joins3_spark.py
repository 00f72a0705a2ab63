"""Stream–stream joins and stream–global-table joins through Spark (2 input partitions)
give the same final results as the TopologyTestDriver."""
from __future__ import annotations

from streamlib import JoinWindows, Materialized, Produced, Serdes, StreamsBuilder
from streamlib.topology import Topology

from both_engines import Input, run_both
from join_helpers import tostring_joiner

S = Serdes.string()
KEYS = [f"k{i}" for i in range(6)]


def results(outcome, topic: str) -> list[tuple]:
    """The records of ``topic`` as (key, value, timestamp), in a canonical order."""
    return sorted((r[0], r[1], r[2]) for r in outcome.outputs[topic])


def stream_stream_topology() -> Topology:
    builder = StreamsBuilder()
    clicks, views = builder.stream("clicks"), builder.stream("views")
    windows = JoinWindows.of_time_difference(100, grace=20)
    clicks.join(views, tostring_joiner, windows).to("inner", Produced.with_(S, S))
    clicks.left_join(views, tostring_joiner, windows).to("left", Produced.with_(S, S))
    clicks.outer_join(views, tostring_joiner, windows).to("outer", Produced.with_(S, S))
    # a re-keyed side, repartitioned before the join (other topics: a sub-topology that
    # reads its own repartition would be a cycle of Spark stages)
    (builder.stream("ratings").map(lambda k, v: (v.split("-")[0], v))
     .join(builder.stream("users"), tostring_joiner, JoinWindows.of_time_difference(50))
     .to("rekeyed", Produced.with_(S, S)))
    return builder.build()


def stream_stream_inputs() -> list[Input]:
    clicks = [(KEYS[i % 6], f"c{i}", 10 * i) for i in range(30)]
    views = [(KEYS[(i * 5) % 6], f"{KEYS[i % 6]}-v{i}", 10 * i + 35) for i in range(0, 30, 2)]
    views.append(("k-lonely", "k-lonely-v", 500))   # no click of its key: null+view
    # one record far ahead on each side closes every window (in the driver and on Spark)
    clicks.append(("k0", "last-click", 10_000))
    views.append(("k1", "k1-last-view", 10_001))
    users = [(k, f"user-{k}", 100 * i) for i, k in enumerate(KEYS)]
    ratings = [(f"r{i}", f"{KEYS[i % 6]}-rating{i}", 20 * i) for i in range(30)]
    return [Input("clicks", clicks, partitions=2), Input("views", views, partitions=2),
            Input("users", users, partitions=2), Input("ratings", ratings, partitions=2)]


def test_stream_stream_joins_through_spark(spark, tmp_path):
    outputs = {topic: (S, S) for topic in ("inner", "left", "outer", "rekeyed")}
    driver, on_spark = run_both(spark, tmp_path, stream_stream_topology, stream_stream_inputs(),
                                outputs, cache_max_bytes=0)
    for topic in outputs:
        assert results(on_spark, topic) == results(driver, topic), topic
    inner, outer = results(driver, "inner"), results(driver, "outer")
    assert inner and any(v.endswith("+null") for _, v, _ in outer)
    assert any(v.startswith("null+") for _, v, _ in outer)
    assert set(inner) <= set(results(driver, "left")) and results(driver, "rekeyed")


def global_topology() -> Topology:
    builder = StreamsBuilder()
    products = builder.global_table("products", materialized=Materialized.as_("products"))
    orders = builder.stream("orders")
    # an order without a product id selects None: dropped by the join, joined with no
    # product by the left join (KIP-962)
    product_of = lambda k, v: v.split(":")[0] or None  # noqa: E731
    orders.join(products, product_of, tostring_joiner).to("enriched", Produced.with_(S, S))
    orders.left_join(products, product_of, tostring_joiner).to("all-orders", Produced.with_(S, S))
    return builder.build()


def global_inputs() -> list[Input]:
    products = [(f"p{i}", f"product-{i}", i) for i in range(4)] + [("p2", None, 5)]
    orders = [(f"o{i}", f"p{i % 5}:{i}", 100 + i) for i in range(20)] + [("o-none", ":20", 120)]
    return [Input("products", products, partitions=3), Input("orders", orders, partitions=2)]


def test_global_table_join_through_spark(spark, tmp_path):
    """Each task catches its replica of the 3-partition global topic up before the batch;
    the 2-partition stream is not repartitioned (the global topic need not be
    co-partitioned with it)."""
    outputs = {"enriched": (S, S), "all-orders": (S, S)}
    driver, on_spark = run_both(spark, tmp_path, global_topology, global_inputs(), outputs,
                                cache_max_bytes=0)
    for topic in outputs:
        assert results(on_spark, topic) == results(driver, topic), topic
    assert len(results(on_spark, "enriched")) == 12 and len(results(on_spark, "all-orders")) == 21
    assert ("o-none", ":20+null", 120) in results(on_spark, "all-orders")
    assert on_spark.stores["products"] == driver.stores["products"] == {
        "p0": "product-0", "p1": "product-1", "p3": "product-3"}
    assert on_spark.metrics["restored_records"] >= 5


def fk_topology() -> Topology:
    builder = StreamsBuilder()
    orders = builder.table("fk-orders")
    customers = builder.table("fk-customers")
    extract = lambda v: v.split("|")[1]  # noqa: E731
    orders.join(customers, tostring_joiner, materialized=Materialized.as_("fk-inner"),
                foreign_key_extractor=extract).to_stream().to("fk-inner-out", Produced.with_(S, S))
    orders.left_join(customers, tostring_joiner, materialized=Materialized.as_("fk-left"),
                     foreign_key_extractor=extract).to_stream().to("fk-left-out", Produced.with_(S, S))
    return builder.build()


def fk_inputs() -> list[Input]:
    customers = [(f"c{i}", f"name{i}", 10 * i) for i in range(4)] + [("c2", None, 200), ("c3", "NAME3", 210)]
    orders = ([(f"o{i}", f"order{i}|c{i % 5}", 5 + 10 * i) for i in range(10)]
              + [("o1", "order1b|c3", 300), ("o2", None, 310), ("o4", "order4b|c0", 320)])
    return [Input("fk-customers", customers, partitions=2), Input("fk-orders", orders, partitions=2)]


def test_foreign_key_joins_through_spark(spark, tmp_path):
    """The three sub-topologies (left, right, result) run as Spark stages; the result
    tables equal the driver's."""
    outputs = {"fk-inner-out": (S, S), "fk-left-out": (S, S)}
    driver, on_spark = run_both(spark, tmp_path, fk_topology, fk_inputs(), outputs, cache_max_bytes=0)
    assert on_spark.stores == driver.stores
    for topic in outputs:
        assert on_spark.final(topic) == driver.final(topic), topic
    assert driver.stores["fk-inner"] == {
        "o0": "order0|c0+name0", "o1": "order1b|c3+NAME3", "o3": "order3|c3+NAME3",
        "o4": "order4b|c0+name0", "o5": "order5|c0+name0", "o6": "order6|c1+name1",
        "o8": "order8|c3+NAME3"}
    assert driver.stores["fk-left"]["o7"] == "order7|c2+null"


def test_start_fails_for_a_join_of_topics_with_different_partition_counts(spark, tmp_path):
    """Co-partitioning is checked at start(): the error names both topics and counts."""
    import pytest
    from engine import Workspace
    from streamlib.topology import TopologyError
    workspace = Workspace(tmp_path)
    workspace.produce("left", [("a", "1", 0)], partitions=2)
    workspace.produce("right", [("a", "2", 0)], partitions=3)
    builder = StreamsBuilder()
    builder.stream("left").join(builder.stream("right"), tostring_joiner,
                                JoinWindows.of_time_difference(10)).to("out")
    with pytest.raises(TopologyError, match=r"'left' \(2 partitions\), 'right' \(3 partitions\)"):
        workspace.run(spark, builder.build())


def test_stream_stream_joins_over_several_runs(spark, tmp_path):
    """Join stores, the outer-join buffer and the shared stream time carry over from run
    to run (restarts): the inputs arrive in time-ordered chunks, one run each, so matches
    and closed windows fall in later micro-batches than their records."""
    from both_engines import run_driver
    from engine import Workspace
    workspace = Workspace(tmp_path)
    inputs = stream_stream_inputs()
    outputs = {topic: (S, S) for topic in ("inner", "left", "outer", "rekeyed")}
    driver = run_driver(stream_stream_topology(), inputs, outputs, workspace.config(cache_max_bytes=0))
    for lo, hi in ((0, 100), (100, 200), (200, 400), (400, 1 << 40)):
        for inp in inputs:
            workspace.produce(inp.topic, [r for r in inp.records if lo <= r[2] < hi], inp.partitions)
        workspace.run(spark, stream_stream_topology(), cache_max_bytes=0).stop()
    for topic in outputs:
        on_spark = sorted(r[:3] for r in workspace.read(topic))
        assert on_spark == results(driver, topic), topic


def test_global_table_updates_between_runs_reach_every_task(spark, tmp_path):
    """A restarted application's tasks catch their replicas up with the global records
    produced meanwhile (only those: the replicas remember their offsets)."""
    from engine import Workspace
    workspace = Workspace(tmp_path)
    workspace.produce("products", [("p0", "old-0", 0), ("p1", "old-1", 1)], partitions=3)
    workspace.produce("orders", [(f"o{i}", f"p{i % 2}:{i}", 10 + i) for i in range(4)], partitions=2)
    workspace.run(spark, global_topology(), cache_max_bytes=0).stop()
    workspace.produce("products", [("p0", "new-0", 20), ("p1", None, 21)], partitions=3)
    workspace.produce("orders", [(f"o{i}", f"p{i % 2}:{i}", 30 + i) for i in range(4, 8)], partitions=2)
    app = workspace.run(spark, global_topology(), cache_max_bytes=0)
    try:
        restored = app.metrics()["restored_records"]
        assert dict(app.store("products").all()) == {"p0": "new-0"}
    finally:
        app.stop()
    enriched = sorted((k, v) for k, v, _ in workspace.read("enriched"))
    assert enriched == [("o0", "p0:0+old-0"), ("o1", "p1:1+old-1"), ("o2", "p0:2+old-0"),
                        ("o3", "p1:3+old-1"), ("o4", "p0:4+new-0"), ("o6", "p0:6+new-0")]
    assert restored <= 2 * 2   # each task read only the two new global records
