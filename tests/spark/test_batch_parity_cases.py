"""Cases where Spark once gave another result than the ``TopologyTestDriver`` (issue:
"Spark gives the test driver's result, whatever the micro-batches"), pinned through Spark.

- A foreign-key join whose right table is filtered: the filter keeps the rows the join
  looks up in its own store, which a cached table source upstream only fed at the end of
  the micro-batch, so a subscription in the same batch found no row.
- Batches cut with ``max_records_per_batch``: a batch read each partition in proportion to
  its backlog and every task was then advanced to the application's stream time, so a
  lagging partition's on-time records became late.
- A late click after a re-grouping (window closed by the key's own stream time): counted
  and dropped exactly as the driver does, with and without a join beside the count.
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from both_engines import Input, assert_engines_agree, run_both, run_driver
from engine import Workspace
from streamlib import (Consumed, Produced, Serdes, StreamsBuilder, Suppressed, TimeWindows)

S = Serdes.string()
L = Serdes.long()


def fk_join_of_filtered_table():
    builder = StreamsBuilder()
    left = builder.table("left", consumed=Consumed.with_(S, S))
    right = builder.table("right", consumed=Consumed.with_(S, S)).filter(lambda key, value: True)
    (left.join(right, lambda order, customer: f"{order}/{customer}", foreign_key_extractor=lambda v: v)
     .to_stream().to("out", produced=Produced.with_(S, S)))
    return builder.build()


def test_a_foreign_key_join_finds_the_rows_of_a_filtered_table_read_in_the_same_batch(spark, tmp_path):
    inputs = [Input("right", [("c1", "alice", 1000)]), Input("left", [("o1", "c1", 2000)])]
    driver, on_spark = run_both(spark, tmp_path, fk_join_of_filtered_table, inputs, {"out": (S, S)})
    assert driver.final("out") == {"o1": "c1/alice"}
    assert_engines_agree(driver, on_spark, {"out": (S, S)})
    assert on_spark.metrics["dropped_records"] == driver.metrics["dropped_records"] == 0


def final_window_counts():
    builder = StreamsBuilder()
    (builder.stream("events", consumed=Consumed.with_(S, S)).group_by_key()
     .windowed_by(TimeWindows.of(timedelta(seconds=10), grace=timedelta(0))).count()
     .suppress(Suppressed.until_window_closes()).to_stream()
     .map(lambda windowed, count: (f"{windowed.key}@{windowed.window.start}", count))
     .to("out", produced=Produced.with_(S, L)))
    return builder.build()


@pytest.mark.parametrize("batch", [None, 4, 2])
def test_where_batches_are_cut_does_not_make_a_lagging_partition_late(spark, tmp_path, batch):
    # "a" lands in partition 0, "d" in partition 1 (murmur2 over 2 partitions)
    records = [("a", "x", ts) for ts in (1000, 25000, 26000, 27000)] + [("d", "x", ts) for ts in (2000, 3000, 4000, 5000)]
    inputs = [Input("events", records, partitions=2)]
    workspace = Workspace(tmp_path)
    driver = run_driver(final_window_counts(), [Input("events", sorted(records, key=lambda r: r[2]))],
                        {"out": (S, L)}, workspace.config())
    for key, value, timestamp in records:
        workspace.produce("events", [(key, value, timestamp)], partitions=2)
    overrides = {"max_records_per_batch": batch} if batch else {}
    app = workspace.run(spark, final_window_counts(), **overrides)
    try:
        dropped = app.metrics()["dropped_records"]
    finally:
        app.stop()
    on_spark = {key: value for key, value, _ in workspace.read("out", S, L)}
    assert driver.final("out") == {"a@0": 1, "d@0": 4}
    assert on_spark == driver.final("out")
    assert dropped == driver.metrics["dropped_records"] == 0


def clicks_per_page(with_join: bool):
    def build():
        builder = StreamsBuilder()
        clicks = builder.stream("clicks", consumed=Consumed.with_(S, S))
        (clicks.group_by(lambda user, page: page)
         .windowed_by(TimeWindows.of(timedelta(minutes=1), grace=timedelta(seconds=10))).count()
         .suppress(Suppressed.until_window_closes()).to_stream()
         .map(lambda windowed, count: (f"{windowed.key}@{windowed.window.start}", count))
         .to("out", produced=Produced.with_(S, L)))
        if with_join:
            clicks.left_join(clicks.to_table(), lambda a, b: f"{a}|{b}").to("joined", produced=Produced.with_(S, S))
        return builder.build()
    return build


@pytest.mark.parametrize("partitions,with_join", [(1, False), (2, True)])
def test_a_click_after_its_window_closed_is_dropped(spark, tmp_path, partitions, with_join):
    # one user, so all clicks are in one partition, in this order: /home at +30 s comes
    # when the page's stream time is 75 s, after its minute closed (60 s + 10 s grace)
    seconds = [(1, "/home"), (2, "/home"), (30, "/cart"), (59, "/cart"), (61, "/home"), (65, "/home"),
               (55, "/home"), (75, "/home"), (30, "/home"), (200, "/home")]
    inputs = [Input("clicks", [("u1", page, s * 1000) for s, page in seconds], partitions=partitions)]
    driver, on_spark = run_both(spark, tmp_path, clicks_per_page(with_join), inputs, {"out": (S, L)})
    assert driver.final("out") == {"/home@0": 3, "/cart@0": 2, "/home@60000": 3}
    assert on_spark.final("out") == driver.final("out")
    assert on_spark.metrics["dropped_records"] == driver.metrics["dropped_records"] == 1
