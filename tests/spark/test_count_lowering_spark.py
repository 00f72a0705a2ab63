"""Through Spark, a count behind a repartition is pre-aggregated in the JVM (the count
kind's batch lowering) and a windowed count never is: asserted on the compiled plan,
with the same results as the driver."""
from __future__ import annotations

import re

import pytest

from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder, TimeWindows
from both_engines import Input, Outcome, run_driver
from engine import Workspace, latest_per_key, python_count

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


@pytest.mark.parametrize("columns", [False, True], ids=["python-split", "column-split"])
def test_a_key_is_counted_by_one_task_whatever_headers_its_records_carry(spark, tmp_path, columns):
    """Records of one key with different headers (tracing headers, say) reach the same
    count task: the pre-aggregation groups by key and headers, but the rows must be
    partitioned by key alone, like an uncached count's input."""
    workspace = Workspace(tmp_path)
    workspace.backend.create_topic("lines", partitions=2)
    lines = [" ".join(f"w{(i * 7 + j) % 11}" for j in range(5)) for i in range(60)]
    for i, line in enumerate(lines):
        headers = [("trace", f"t{i % 4}".encode())] if i % 3 else None
        workspace.backend.produce("lines", value=line.encode(), timestamp=1000 + i, headers=headers,
                                  partition=i % 2)
    workspace.backend.flush()
    builder = StreamsBuilder()
    lines_stream = builder.stream("lines", consumed=Consumed.with_(S, S))
    if columns:
        from pyspark.sql import functions as F
        words = (lines_stream.flat_map_values(F.split(F.col("value"), " "))
                 .select_key(F.col("value")).group_by_key())
    else:
        words = lines_stream.flat_map_values(str.split).group_by(lambda key, word: word)
    (words.count(materialized=Materialized.as_("counts"))
     .to_stream().to("out", produced=Produced.with_(S, L)))
    app = workspace.run(spark, builder.build(), num_partitions=4, max_records_per_batch=25)
    try:
        stored = list(app.store("counts").all())
    finally:
        app.stop()
    expected = python_count(lines)
    assert sorted(k for k, _ in stored) == sorted(expected), "a key is held by more than one task"
    assert dict(stored) == dict(expected)
    assert latest_per_key(workspace.read("out", S, L)) == dict(expected)
