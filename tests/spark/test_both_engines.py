"""Every stateful operator of the non-windowed DSL, written once and run on both
engines (TopologyTestDriver and Spark): the same final stores, the same final output
tables, and without caching the same sequence of updates per key."""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

from streamlib import (Consumed, Grouped, Materialized, Produced, Repartitioned, Serdes,
                       StreamsBuilder, Topology)
from both_engines import Input, Outcome, assert_engines_agree, run_both, run_driver, run_spark
from engine import Workspace

S, L, J = Serdes.string(), Serdes.long(), Serdes.json()
USERS = [f"u{i}" for i in range(6)]
PAGES = ["home", "cart", "search", "home/new", "help"]
CITIES = ["oslo", "rome", "lima"]


# -- streams: several topics, merge, group_by_key/group_by, split, repartition, partitioner --
def longer(agg: str, value: str) -> str:
    return value if len(value) > len(agg) else agg


def route(key, value, num_partitions: int) -> int:
    """A custom partitioner: by the value's first letter."""
    return ord((value or "?")[0]) % num_partitions


def add_streams(builder: StreamsBuilder) -> None:
    clicks = builder.stream(["clicks-a", "clicks-b"], consumed=Consumed.with_(S, S))
    views = builder.stream("views", consumed=Consumed.with_(S, S))
    merged = clicks.merge(views)
    grouped = merged.group_by_key(Grouped.with_(S, S))
    grouped.count(Materialized.as_("counts")).to_stream().to("counts-out", Produced.with_(S, L))
    grouped.reduce(longer, Materialized.as_("longest")).to_stream().to("longest-out")
    (grouped.aggregate(list, lambda key, page, pages: pages + [page],
                       Materialized.as_("pages").with_value_serde(J))
     .to_stream().to("pages-out", Produced.with_(S, J)))
    branches = merged.split(name="split-").branch(lambda k, v: (v or "").startswith("home"), name="home") \
        .default_branch(name="other")
    branches["split-home"].group_by_key().count(Materialized.as_("home-counts")) \
        .to_stream().to("home-out", Produced.with_(S, L))
    (branches["split-other"].group_by(lambda user, page: page, Grouped.with_(S, S, name="by-page"))
     .count(Materialized.as_("page-counts")).to_stream().to("page-out", Produced.with_(S, L)))
    (merged.repartition(Repartitioned.with_(S, S, name="by-user", num_partitions=3))
     .group_by_key().count(Materialized.as_("rep-counts")).to_stream()
     .to("rep-out", Produced.with_(S, L)))
    merged.to("routed", Produced.with_(S, S, partitioner=route))


#: table updates (per key in order); "routed" is a stream split across partitions by value
STREAM_OUTPUTS = {"counts-out": (S, L), "longest-out": (S, S), "pages-out": (S, J),
                  "home-out": (S, L), "page-out": (S, L), "rep-out": (S, L)}


def stream_inputs(seed: int = 7) -> list[Input]:
    rng = random.Random(seed)
    clock = iter(range(1000, 100_000, 10))
    records = {topic: [] for topic in ("clicks-a", "clicks-b", "views")}
    for _ in range(90):
        records[rng.choice(list(records))].append((rng.choice(USERS), rng.choice(PAGES), next(clock)))
    # a null key (aggregations drop and count it; to() keeps it) and a null value
    records["views"] += [(None, "home", next(clock)), ("u1", None, next(clock))]
    return [Input(topic, rows, partitions=2) for topic, rows in records.items()]


# -- tables: source table with updates and tombstones, filter/map_values, re-grouping -------
def add_tables(builder: StreamsBuilder) -> None:
    users = builder.table("users", consumed=Consumed.with_(S, J), materialized=Materialized.as_("users"))
    users.to_stream().to("users-out", Produced.with_(S, J))
    users.filter(lambda k, v: v["age"] >= 18, Materialized.as_("adults")) \
        .to_stream().to("adults-out", Produced.with_(S, J))
    users.map_values(lambda v: v["name"].upper(), Materialized.as_("names").with_value_serde(S)) \
        .to_stream().to("names-out", Produced.with_(S, S))
    by_city = users.group_by(lambda k, v: (v["city"], v), Grouped.with_(S, J, name="by-city"))
    by_city.count(Materialized.as_("city-counts")).to_stream().to("city-counts-out", Produced.with_(S, L))
    (by_city.aggregate(lambda: 0, lambda k, v, agg: agg + v["age"], lambda k, v, agg: agg - v["age"],
                       Materialized.as_("city-ages").with_value_serde(L))
     .to_stream().to("city-ages-out", Produced.with_(S, L)))
    (by_city.reduce(lambda agg, v: {"age": agg["age"] + v["age"]},
                    lambda agg, v: {"age": agg["age"] - v["age"]},
                    Materialized.as_("city-reduce").with_value_serde(J))
     .to_stream().to("city-reduce-out", Produced.with_(S, J)))
    builder.stream("status", consumed=Consumed.with_(S, S)) \
        .to_table(Materialized.as_("status")).to_stream().to("status-out")


TABLE_OUTPUTS = {"users-out": (S, J), "adults-out": (S, J), "names-out": (S, S),
                 "city-counts-out": (S, L), "city-ages-out": (S, L), "city-reduce-out": (S, J),
                 "status-out": (S, S)}


def table_inputs(seed: int = 11) -> list[Input]:
    rng = random.Random(seed)
    clock = iter(range(1005, 100_000, 10))  # between the stream inputs' times
    users, status = [], []
    for _ in range(60):
        user = rng.choice(USERS)
        if rng.random() < 0.15:
            users.append((user, None, next(clock)))  # tombstone (sometimes of a missing row)
        else:
            users.append((user, {"name": f"n{user}{rng.randint(0, 3)}", "age": rng.randint(10, 40),
                                 "city": rng.choice(CITIES)}, next(clock)))
        if rng.random() < 0.5:
            status.append((user, rng.choice([None, "on", "off", "away"]), next(clock)))
    return [Input("users", users, partitions=2, value_serde=J), Input("status", status, partitions=2)]


def topology_of(*parts) -> Topology:
    builder = StreamsBuilder()
    for add in parts:
        add(builder)
    return builder.build()


def streams_topology() -> Topology:
    return topology_of(add_streams)


def tables_topology() -> Topology:
    return topology_of(add_tables)


def assert_counters_agree(driver: Outcome, spark: Outcome) -> None:
    for counter in ("records_in", "records_out", "dropped_records"):
        assert spark.metrics[counter] == driver.metrics[counter], counter


def test_stream_aggregations_split_merge_repartition_and_partitioner(spark, tmp_path):
    outputs = STREAM_OUTPUTS | {"routed": (S, S)}
    driver, on_spark = run_both(spark, tmp_path, streams_topology, stream_inputs(), outputs,
                                cache_max_bytes=0)
    assert_engines_agree(driver, on_spark, STREAM_OUTPUTS, every_update=True)
    assert_counters_agree(driver, on_spark)
    # the null key in counts/longest/pages, home-counts and rep-counts; the null value
    # in counts/longest/pages, rep-counts and (as a null page key) page-counts
    assert driver.metrics["dropped_records"] == 5 + 5
    assert driver.stores["counts"]["u1"] == sum(
        1 for inp in stream_inputs() for k, v, _ in inp.records if k == "u1" and v is not None)
    assert Counter(r[:3] for r in on_spark.outputs["routed"]) == Counter(r[:3] for r in driver.outputs["routed"])
    assert {r[3] for r in on_spark.outputs["routed"]} == {0, 1}
    assert all(partition == route(key, value, 2) for key, value, _, partition in on_spark.outputs["routed"])


def test_tables_updates_tombstones_and_rows_moving_between_groups(spark, tmp_path):
    driver, on_spark = run_both(spark, tmp_path, tables_topology, table_inputs(), TABLE_OUTPUTS,
                                cache_max_bytes=0)
    assert_engines_agree(driver, on_spark, TABLE_OUTPUTS, every_update=True)
    assert_counters_agree(driver, on_spark)
    users = driver.stores["users"]
    assert driver.stores["adults"] == {k: v for k, v in users.items() if v["age"] >= 18}
    assert {c: n for c, n in driver.stores["city-counts"].items() if n} == {
        c: n for c in CITIES if (n := sum(v["city"] == c for v in users.values()))}
    assert {c: a for c, a in driver.stores["city-ages"].items() if a} == {
        c: a for c in CITIES if (a := sum(v["age"] for v in users.values() if v["city"] == c))}


def test_cached_run_over_two_batches_ends_like_the_driver(spark, tmp_path):
    """With caching (the default) each commit emits the latest update per key: the
    updates differ from the driver's, the final stores and output tables do not."""
    inputs = stream_inputs(3) + table_inputs(5)
    outputs = STREAM_OUTPUTS | TABLE_OUTPUTS
    workspace = Workspace(tmp_path)
    build = lambda: topology_of(add_streams, add_tables)  # noqa: E731
    driver = run_driver(build(), inputs, outputs, workspace.config())
    cut = 1450  # each batch holds every input up to a time, so the order is the driver's
    run_spark(spark, workspace, build(), [replace(i, records=[r for r in i.records if r[2] < cut])
                                          for i in inputs], outputs)
    on_spark = run_spark(spark, workspace, build(), [replace(i, records=[r for r in i.records if r[2] >= cut])
                                                     for i in inputs], outputs)
    assert_engines_agree(driver, on_spark, outputs)
    assert sum(map(len, on_spark.outputs.values())) < sum(map(len, driver.outputs.values()))
