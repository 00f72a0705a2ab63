"""Stateless steps written as Spark ``Column`` expressions, run in the JVM.

A chain of Column steps right after a source (``filter``, ``map_values``,
``flat_map_values``, ``select_key`` over ``key``/``value``) becomes DataFrame
transformations of the source rows: keys and values are decoded in the JVM, the
chain applied, and the result encoded with the serdes of the stream at the chain's
end. The Python stage then sees the chain's output as if it were the source; when
nothing but a repartition follows, the Python stage is skipped altogether.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Hashable, Optional

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streamlib.config import StreamsConfig
from streamlib.node_kinds import COLUMN, MERGE
from streamlib.node_params import ColumnOp, NoParams
from streamlib.serdes import Serde
from streamlib.spark.exprs import once, with_columns
from streamlib.spark.lowerings import apply_column_step, column_step, is_column_step
from streamlib.topology import Node, Topology, TopologyError

_DECODABLE = ("string()", "bytes()")
_ENCODABLE = ("string()", "bytes()", "long()")


@dataclass(frozen=True)
class ColumnChain:
    """The Column steps following one source, in order, and the serdes at their end."""

    source: str
    steps: tuple[str, ...]
    key_serde: Serde
    value_serde: Serde

    @property
    def end(self) -> str:
        return self.steps[-1]


def column_chains(topology: Topology, config: StreamsConfig) -> dict[str, ColumnChain]:
    """Chains by source node name; a Column step anywhere else is a TopologyError."""
    chains: dict[str, ColumnChain] = {}
    placed: set[str] = set()
    for node in topology:
        if not node.spec.source or node.params.internal:
            continue
        key_serde = node.params.key_serde
        value_serde = node.params.value_serde
        steps: list[str] = []
        current = node.name
        while True:
            children = [topology.nodes[c] for c in topology.children(current)]
            if len(children) != 1 or not is_column_step(children[0]):
                break
            step = children[0]
            if not steps:
                _check_serdes(step, key_serde, value_serde)
            steps.append(step.name)
            if step.params.op is ColumnOp.SELECT_KEY:
                key_serde = config.default_key_serde
            elif step.params.op in (ColumnOp.MAP_VALUES, ColumnOp.FLAT_MAP_VALUES):
                value_serde = config.default_value_serde
            current = step.name
        if steps:
            chains[node.name] = ColumnChain(node.name, tuple(steps), key_serde, value_serde)
            placed.update(steps)
    for node in topology:
        if is_column_step(node) and node.name not in placed:
            raise TopologyError(
                f"{node.name}: a Spark Column step must follow a source directly (or through "
                "other Column steps, with no branching); write it as a Python function here")
    for chain in chains.values():
        for serde in (chain.key_serde, chain.value_serde):
            if serde.name not in _ENCODABLE:
                raise TopologyError(f"{chain.end}: Column steps can produce {', '.join(_ENCODABLE)} "
                                    f"keys and values, not {serde!r}; set the default serdes")
    return chains


def _check_serdes(step: Node, key_serde: Serde, value_serde: Serde) -> None:
    for what, serde in (("key", key_serde), ("value", value_serde)):
        if serde.name not in _DECODABLE:
            raise TopologyError(f"{step.name}: Column steps read {', '.join(_DECODABLE)} "
                                f"{what}s; the source's {what} serde is {serde!r}")


def without_columns(topology: Topology, chains: dict[str, ColumnChain]) -> Topology:
    """The topology the executors run: Column steps become pass-through steps (their
    work is done in the JVM) and each chain's source reads the chain's encoding."""
    nodes = {}
    for name, node in topology.nodes.items():
        if is_column_step(node):
            node = Node(node.name, MERGE.name, list(node.parents), NoParams(), node.stores)
        elif name in chains:
            params = replace(node.params, key_serde=chains[name].key_serde,
                             value_serde=chains[name].value_serde)
            node = replace(node, params=params)
        nodes[name] = node
    return Topology(nodes, dict(topology.stores))


def apply_chain(rows: DataFrame, chain: ColumnChain, topology: Topology,
                config: StreamsConfig) -> DataFrame:
    """Source rows -> the chain's output rows, same columns, key/value encoded."""
    source = topology.nodes[chain.source].params
    key_serde = source.key_serde
    value_serde = source.value_serde
    df = with_columns(rows, ("decode", key_serde.name, value_serde.name), lambda: {
        "key": _decode("key", key_serde), "value": _decode("value", value_serde)})
    for name in chain.steps:
        df = apply_column_step(df, topology.nodes[name])
    return with_columns(df, ("encode", chain.key_serde.name, chain.value_serde.name), lambda: {
        "key": _encode("key", chain.key_serde), "value": _encode("value", chain.value_serde)})


@column_step(COLUMN)
def _apply(df: DataFrame, node: Node) -> DataFrame:
    expr: Column = node.params.column
    op = node.params.op
    if op is ColumnOp.FILTER:
        return df.where(_built_from(expr, (op, node.params.negate), lambda: _keep(expr, node.params.negate)))
    if op is ColumnOp.MAP_VALUES:
        return df.withColumn("value", expr)
    if op is ColumnOp.SELECT_KEY:
        return df.withColumn("key", expr)
    if op is ColumnOp.FLAT_MAP_VALUES:
        # In place of the value, columns in their order: one call, not a select per
        # column name and another to restore the order (~15 ms a batch).
        exploded = _built_from(expr, op, lambda: F.explode(expr))
        return with_columns(df, ("step", id(expr), op), lambda: {"value": exploded})
    raise TopologyError(f"{node.name}: unknown Column step {op!r}")


def _keep(expr: Column, negate: bool) -> Column:
    keep = F.coalesce(expr.cast("boolean"), F.lit(False))
    return ~keep if negate else keep


def _built_from(expr: Column, what: Hashable, make: Callable[[], Column]) -> Column:
    """``make()``, built once per user Column ``expr`` (the cache keeps ``expr`` alive,
    so its id names it)."""
    return once(("step", id(expr), what), lambda: (expr, make()))[1]


def _decode(name: str, serde: Serde) -> Column:
    def make() -> Column:
        return F.col(name).cast("string") if serde.name == "string()" else F.col(name)

    return once(("decode", name, serde.name), make)


def _encode(name: str, serde: Serde) -> Column:
    def make() -> Column:
        column = F.col(name)
        if serde.name == "long()":  # 8-byte big-endian two's complement, as Kafka's LongSerializer
            return F.unhex(F.lpad(F.hex(column.cast("bigint")), 16, "0"))
        if serde.name == "string()":
            return column.cast("string").cast("binary")
        return column.cast("binary")

    return once(("encode", name, serde.name), make)


def repartition_rows(rows: DataFrame, topic: str) -> DataFrame:
    """Chain output bound straight for a repartition: tagged with the producing Spark
    partition and a sequence in its row order, like a Python task's output."""
    return with_columns(rows, ("repartition rows", topic), lambda: {
        "topic": F.lit(topic), "partition": F.spark_partition_id(), "offset": F.monotonically_increasing_id()})


def chain_feeds_only(topology: Topology, chain: ColumnChain, config: StreamsConfig) -> Optional[list[str]]:
    """The repartition topics the chain's end feeds, when it feeds nothing else and
    each repartition encodes keys and values exactly as the chain does; else None."""
    topics = []
    for child_name in topology.children(chain.end):
        child = topology.nodes[child_name]
        if not child.spec.repartition:
            return None
        key_serde = child.params.key_serde
        value_serde = child.params.value_serde
        if (key_serde, value_serde) != (chain.key_serde, chain.value_serde):
            return None
        topics.append(child.params.topic)
    return topics or None

