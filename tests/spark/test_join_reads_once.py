"""A shuffled stage with several plain sources (a stream–table join reads two topics)
reads the batch's rows once: one scan of the batch, at most one topic filter, not a
union of one filtered scan per source (which read, in Python and into the JVM, every
row of the batch once per source: 91f2274). Asserted on the compiled plan of the batch,
with the join's results checked. The batch is small: ``small_batch_reader`` (which would
run the join inside the read task, with no shuffle at all) is left out."""
from __future__ import annotations

import re

import pytest

from engine import Workspace
from streamlib import Consumed, Produced, Serdes, StreamsBuilder
from streamlib.spark.plan import EXCLUDED_RULES_CONF

S = Serdes.string()


def order_join(with_clicks: bool):
    """Orders joined with the customers table; with ``with_clicks`` the application
    also reads a third topic in a stage of its own (the join's stage then filters)."""
    builder = StreamsBuilder()
    customers = builder.table("customers", consumed=Consumed.with_(S, S))
    (builder.stream("orders", consumed=Consumed.with_(S, S))
     .join(customers, lambda order, customer: f"{order}@{customer}")
     .to("joined", produced=Produced.with_(S, S)))
    if with_clicks:
        builder.stream("clicks", consumed=Consumed.with_(S, S)).to("clicks-out", produced=Produced.with_(S, S))
    return builder.build()


@pytest.mark.parametrize("with_clicks", [False, True], ids=["join-only", "beside-another-stage"])
def test_a_join_stage_reads_the_batch_once(spark, tmp_path, with_clicks):
    workspace = Workspace(tmp_path)
    workspace.produce("customers", [(f"c{i}", f"name{i}", 1) for i in range(4)], partitions=2)
    workspace.produce("orders", [(f"c{i % 4}", f"o{i}", 10 + i) for i in range(12)], partitions=2)
    if with_clicks:
        workspace.produce("clicks", [("u", "home", 5)], partitions=2)
    spark.conf.set(EXCLUDED_RULES_CONF, "small_batch_reader")
    try:
        app = workspace.run(spark, order_join(with_clicks))
    finally:
        spark.conf.unset(EXCLUDED_RULES_CONF)
    try:
        physical = app.explain().split("== Physical Plan ==")[1]
        joined = sorted(value for _, value, _ in workspace.read("joined"))
    finally:
        app.stop()
    assert joined == sorted(f"o{i}@name{i % 4}" for i in range(12))
    scans = re.findall(r"Scan ExistingRDD|Scan \w+", physical)
    # one read of the batch for the join's stage, one more for the clicks' own stage
    assert len(scans) == (2 if with_clicks else 1), physical
    topic_filters = re.findall(r"topic#\d+ IN \(([^)]*)\)", physical)
    join_filters = [f for f in topic_filters if "orders" in f or "customers" in f]
    assert len(join_filters) == (1 if with_clicks else 0), physical
    if with_clicks:
        assert {t.strip() for t in join_filters[0].split(",")} == {"orders", "customers"}, physical
