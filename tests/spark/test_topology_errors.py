"""Topology mistakes fail at build() or start() with a message that names the node."""
from __future__ import annotations

import pytest

from streamlib import Materialized, Repartitioned, Streams, StreamsBuilder, TopologyError
from engine import Workspace

COPARTITION = (r"KSTREAM-AGGREGATE-\d+: its input topics are not co-partitioned: "
               r"'a' \(2 partitions\), 'b' \(3 partitions\)")


def test_store_name_used_twice_names_the_node_that_has_it():
    builder = StreamsBuilder()
    builder.stream("a").group_by_key().count(materialized=Materialized.as_("counts"))
    with pytest.raises(TopologyError, match=r"store name 'counts' of a new KSTREAM-REDUCE step is "
                                            r"already the store of KSTREAM-AGGREGATE-\d+"):
        builder.stream("b").group_by_key().reduce(max, materialized=Materialized.as_("counts"))


def merged_count(repartition: bool):
    builder = StreamsBuilder()
    merged = builder.stream("a").merge(builder.stream("b"))
    if repartition:
        merged = merged.repartition(Repartitioned.as_("even"))
    merged.group_by_key().count()
    merged.to("out")
    return builder.build()


def test_aggregating_inputs_with_different_partition_counts_fails_naming_node_and_topics():
    with pytest.raises(TopologyError, match=COPARTITION):
        merged_count(repartition=False).check_copartitioned({"a": 2, "b": 3})
    merged_count(repartition=False).check_copartitioned({"a": 3, "b": 3})
    merged_count(repartition=True).check_copartitioned({"a": 2, "b": 3})


def test_start_checks_co_partitioning_before_running(spark, tmp_path):
    workspace = Workspace(tmp_path)
    workspace.produce("a", [("k", "1")], partitions=2)
    workspace.produce("b", [("k", "2")], partitions=3)
    app = Streams(merged_count(repartition=False), workspace.config(), spark=spark)
    with pytest.raises(TopologyError, match=COPARTITION):
        app.process_available()
    assert not app.is_running and "out" not in workspace.backend.list_topics()
