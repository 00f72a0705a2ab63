"""Through Spark, a count behind a repartition is pre-aggregated in the JVM (the count
kind's batch lowering) and a windowed count never is: asserted on the compiled plan,
with the same results as the driver."""
from __future__ import annotations

import re

import pytest

from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder, TimeWindows
from both_engines import Input, Outcome, run_driver
from engine import Workspace

S, L = Serdes.string(), Serdes.long()
SIZE = 1000


def rekeyed_counts(windowed: bool):
    """Values become keys (the count reads a repartition), counted per key or per
    key and 1-second window."""
    builder = StreamsBuilder()
    grouped = (builder.stream("events", consumed=Consumed.with_(S, S))
               .select_key(lambda key, value: value).group_by_key())
    key_serde = S
    if windowed:
        grouped = grouped.windowed_by(TimeWindows.of(SIZE, grace=10 * SIZE))
        key_serde = Serdes.time_windowed(S, SIZE)
    (grouped.count(materialized=Materialized.as_("counts"))
     .to_stream().to("out", produced=Produced.with_(key_serde, L)))
    return builder.build()


@pytest.mark.parametrize("windowed", [False, True], ids=["count", "windowed-count"])
def test_only_the_plain_count_is_pre_aggregated(spark, tmp_path, windowed):
    records = [(f"k{i % 3}", "abc"[i % 3 if i % 4 else 0], i * 150) for i in range(40)]
    inputs = [Input("events", records, partitions=2)]
    outputs = {"out": (Serdes.time_windowed(S, SIZE) if windowed else S, L)}
    workspace = Workspace(tmp_path)
    workspace.produce("events", records, partitions=2)
    app = workspace.run(spark, rekeyed_counts(windowed))
    try:
        physical = app.explain().split("== Physical Plan ==")[1]
        sparked = Outcome({}, {"out": workspace.read("out", *outputs["out"], with_partition=True)})
    finally:
        app.stop()
    # the count's lowering groups the repartitioned rows by key in the JVM, counting
    # them into a `records` column; the windowed count's input is shuffled row by row
    aggregates = re.findall(r"\b(\w*Aggregate)\(", physical)
    assert bool(aggregates) is not windowed, aggregates
    # fixed-width buffers only (headers are a grouping key): a hash map, no sort of the rows
    assert set(aggregates) <= {"HashAggregate"}, aggregates
    assert ("records#" in physical) is not windowed
    driver = run_driver(rekeyed_counts(windowed), inputs, outputs, workspace.config())
    assert sparked.final("out") == driver.final("out")
    assert sparked.final("out")  # the comparison is not between two empty outputs
