"""Typed node params: every kind names a frozen params type, every node the DSL makes
carries one of its kind's, and ``Topology.resolve`` fills default serdes once, per run."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from pyspark import cloudpickle

from streamlib import (Consumed, Joined, JoinWindows, Materialized, Processor, Serdes, SessionWindows,
                       SlidingWindows, StreamsBuilder, StreamsConfig, Suppressed, TimeWindows,
                       TopologyTestDriver)
from streamlib import node_kinds
from streamlib.node_kinds import COLUMN, TABLE_JOIN, NodeKind
from streamlib.node_kinds import _REGISTRY as REGISTERED
from streamlib.node_params import ColumnOp, ColumnParams, TableJoinMode, serde_defaults

from streams_helpers import S

BUILT_IN = [kind for kind in vars(node_kinds).values() if isinstance(kind, NodeKind)]


class Upper(Processor):
    def process(self, record):
        self.context.forward(record.with_value(record.value.upper()))


def rich_topology():
    """One node of every built-in kind but the Spark-only Column step."""
    builder = StreamsBuilder()
    stream = builder.stream("in")
    other = builder.stream("other")
    table = builder.table("table")
    versioned = builder.table("versioned", materialized=Materialized.as_versioned("versions", 1000))
    foreign = builder.table("foreign")
    products = builder.global_table("products")
    stream.filter(lambda k, v: True).filter_not(lambda k, v: False).peek(print).foreach(print)
    mapped = stream.map(lambda k, v: (v, k)).map_values(str.upper).flat_map(lambda k, v: [(k, v)])
    mapped = mapped.flat_map_values(lambda v: [v]).select_key(lambda k, v: k).merge(other)
    branches = mapped.split().branch(lambda k, v: True, name="a").default_branch()
    for branch in branches.values():
        branch.to("branches")
    stream.process(Upper).process_values(Upper).to("processed")
    stream.repartition().to_table().to_stream().to("tabled")
    stream.join(table, lambda v, t: v).to("joined")
    stream.join(versioned, lambda v, t: v, Joined.with_(grace=timedelta(milliseconds=10))).to("graced")
    stream.join(other, lambda a, b: a, JoinWindows.of_time_difference(100)).to("windowed-join")
    stream.outer_join(other, lambda a, b: a, JoinWindows.of_time_difference(100)).to("outer-join")
    stream.join(products, lambda k, v: v, lambda v, p: p).to("enriched")
    grouped = stream.group_by_key()
    grouped.count().to_stream().to("counts")
    grouped.reduce(lambda a, b: a + b).to_stream().to("reduced")
    windowed = grouped.windowed_by(TimeWindows.of(1000)).count()
    windowed.suppress(Suppressed.until_window_closes()).to_stream().to("final")
    grouped.windowed_by(SlidingWindows.of(1000)).count()
    grouped.windowed_by(SessionWindows.with_inactivity_gap(1000)).count()
    derived = table.filter(lambda k, v: True).map_values(str.upper)
    derived.group_by(lambda k, v: (v, k)).count().to_stream().to("regrouped")
    derived.join(foreign, lambda a, b: a).to_stream().to("table-joined")
    table.join(foreign, lambda a, b: a, foreign_key_extractor=lambda v: v).to_stream().to("fk")
    return builder.build()


def test_every_registered_kind_names_a_frozen_params_dataclass():
    for kind in REGISTERED.values():
        assert dataclasses.is_dataclass(kind.params), kind.name
        assert kind.params.__dataclass_params__.frozen, kind.name


def test_every_dsl_node_carries_its_kinds_params():
    topology = rich_topology()
    for node in topology:
        assert isinstance(node.params, node.spec.params), node.name
    assert {node.spec for node in topology} == set(BUILT_IN) - {COLUMN}


def test_a_column_step_has_an_op_not_a_kind_name():
    assert COLUMN.params is ColumnParams
    assert ColumnParams(op=ColumnOp.FILTER, column=None).negate is False


@pytest.mark.parametrize("join, this, other", [("join", TableJoinMode.INNER, TableJoinMode.INNER),
                                               ("left_join", TableJoinMode.LEFT, TableJoinMode.RIGHT),
                                               ("outer_join", TableJoinMode.OUTER, TableJoinMode.OUTER)])
def test_a_table_join_side_has_a_mode_and_old_values_where_it_keeps_unmatched_rows(join, this, other):
    builder = StreamsBuilder()
    left, right = builder.table("left"), builder.table("right")
    getattr(left, join)(right, lambda a, b: (a, b)).to_stream().to("out")
    sides = {"OTHER" if "OTHER-" in node.name else "THIS": node.params
             for node in builder.build() if node.spec is TABLE_JOIN}
    assert (sides["THIS"].mode, sides["OTHER"].mode) == (this, other)
    assert sides["THIS"].parent_sends_old_values is (this is not TableJoinMode.INNER)
    assert sides["OTHER"].parent_sends_old_values is (other is TableJoinMode.OUTER)


def test_resolve_fills_every_unset_serde_once_and_leaves_the_built_topology_alone():
    topology = rich_topology()
    resolved = topology.resolve(StreamsConfig(default_key_serde=Serdes.long(), default_value_serde=S))
    for name, node in resolved.nodes.items():
        for field, which in serde_defaults(type(node.params)):
            before = getattr(topology.nodes[name].params, field)
            expected = before or (Serdes.long() if which == "key" else S)
            assert getattr(node.params, field) == expected, (name, field)
    assert all(store.key_serde is not None and store.value_serde is not None for store in resolved.stores.values())
    assert any(getattr(node.params, field) is None for node in topology
               for field, _ in serde_defaults(type(node.params)))
    assert resolved.describe() == topology.describe()
    assert resolved.resolve(StreamsConfig()) is resolved  # nothing left unset: itself
    shipped = cloudpickle.loads(cloudpickle.dumps(resolved))  # as Spark ships it to executors
    assert shipped.describe() == topology.describe()
    assert all(type(node.params) is type(resolved.nodes[node.name].params) for node in shipped)


@pytest.mark.parametrize("key_serde", [Serdes.string(), Serdes.long()], ids=["string", "long"])
def test_one_topology_runs_with_each_configs_defaults(key_serde):
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count().to_stream().to("out", )
    topology = builder.build()
    for serde in (key_serde, Serdes.string()):  # the same topology, run twice, other defaults
        config = StreamsConfig(application_id="app", default_key_serde=serde, default_value_serde=S)
        with TopologyTestDriver(topology, config) as driver:
            key = 7 if serde.name == "long()" else "k"
            driver.create_input_topic("in", serde, S).pipe_input(key, "x", timestamp=1)
            out = driver.create_output_topic("out", serde, Serdes.long()).read_key_value()
        assert out == (key, 1)
