"""How Spark runs the node kinds it does not simply leave to a task's processor,
registered per :class:`~streamlib.node_kinds.NodeKind` by the module that owns the
lowering (as processors register with ``@processes``):

- a **column step** (``@column_step(KIND)``): a DataFrame transformation run in the
  JVM right after a source (:mod:`streamlib.spark.columns`);
- a **batch lowering** (``@batch_lowering(KIND)``): when a step alone reads a stage's
  repartition input (``Topology.batch_reader``), Spark transforms that input before
  the stage's tasks see it — the count's per-key pre-aggregation
  (:mod:`streamlib.spark.preaggregate`). Without one, a stage's input is shuffled by key.

Repartitions need no lowering of their own: their spec's ``repartition`` role tells
the plan (:mod:`streamlib.spark.plan`) where stages are cut and what each writes.
"""
from __future__ import annotations

from typing import Callable, Optional, TypeVar

from pyspark.sql import DataFrame

from streamlib.config import StreamsConfig
from streamlib.node_kinds import NodeKind
from streamlib.topology import Node, SubTopology, Topology

#: (rows, node) -> rows: a Column step applied to decoded ``key``/``value`` columns
ColumnStep = Callable[[DataFrame, Node], DataFrame]
#: rows of the stage's input -> the rows its tasks get, partitioned like
#: ``repartition(n, "key")`` when ``spark.sql.shuffle.partitions`` is ``n``
BatchInput = Callable[[DataFrame], DataFrame]
#: (topology, source, step, config) -> the step's BatchInput, or None where it does not apply
BatchLowering = Callable[[Topology, Node, Node, StreamsConfig], Optional[BatchInput]]

COLUMN_STEPS: dict[NodeKind, ColumnStep] = {}
BATCH_LOWERINGS: dict[NodeKind, BatchLowering] = {}

F_ = TypeVar("F_", bound=Callable)


def _registrar(table: dict, kind: NodeKind, what: str) -> Callable[[F_], F_]:
    def register(fn: F_) -> F_:
        if table.get(kind, fn) is not fn:
            raise ValueError(f"node kind {kind.name!r} already has a {what}")
        table[kind] = fn
        return fn

    return register


def column_step(kind: NodeKind) -> Callable[[F_], F_]:
    """Decorator: ``fn(rows, node)`` runs nodes of ``kind`` as a Column step."""
    return _registrar(COLUMN_STEPS, kind, "column step")


def batch_lowering(kind: NodeKind) -> Callable[[F_], F_]:
    """Decorator: ``fn(topology, source, node, config)`` lowers a stage whose
    repartition input only a node of ``kind`` reads (or returns None)."""
    return _registrar(BATCH_LOWERINGS, kind, "batch lowering")


def is_column_step(node: Node) -> bool:
    """Whether Spark runs ``node`` as a Column step in the JVM."""
    return node.spec in COLUMN_STEPS


def apply_column_step(rows: DataFrame, node: Node) -> DataFrame:
    return COLUMN_STEPS[node.spec](rows, node)


def stage_batch_input(topology: Topology, sub: SubTopology,
                      config: StreamsConfig) -> Optional[BatchInput]:
    """The batch lowering of the step that alone reads ``sub``'s repartition input, if
    its kind has one and it applies; else None (the input is shuffled by key)."""
    topology = topology.resolve(config)
    reader = topology.batch_reader(sub)
    if reader is None or not reader[0].params.internal:
        return None   # rows of a user topic must pass its serdes and handler one by one
    source, step = reader
    lower = BATCH_LOWERINGS.get(step.spec)
    return lower(topology, source, step, config) if lower is not None else None


# The built-in lowerings, loaded here, the registry's one import point: a reader of
# COLUMN_STEPS or BATCH_LOWERINGS sees them all whichever module imported this first.
from streamlib.spark import columns as _columns, preaggregate as _preaggregate  # noqa: E402,F401
