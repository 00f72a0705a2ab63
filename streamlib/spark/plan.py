"""The physical plan of a micro-batch: how Spark runs each sub-topology.

:func:`plain_plan` is the plan without any optimisation, the reference every other
plan must equal in results: each sub-topology is a stage whose tasks run inside
``mapInArrow``, over the batch's rows of its source topics and the rows upstream stages
wrote to its repartition topics, shuffled by key when it is stateful or reads a
repartition (the role of Kafka Streams' repartition topic).

:func:`plan_batch` then applies the rules of :mod:`streamlib.spark.rules` in order;
each rule states once where it applies and rewrites the plan there. The result is
decided once per start of the application, turned into DataFrames every batch by
:mod:`streamlib.spark.lower`. Spark's conf ``spark.streamlib.plan.excludedRules``
(names, comma-separated, or ``*``) leaves rules out, as
``spark.sql.optimizer.excludedRules`` does for Spark's own optimizer.

Examples
--------
>>> from streamlib import StreamsBuilder, StreamsConfig
>>> builder = StreamsBuilder()
>>> _ = builder.stream("lines").flat_map_values(str.split).group_by(lambda k, v: v).count()
>>> plan = plain_plan(PlanContext(builder.build(), StreamsConfig(), None, 4))
>>> print(plan.describe())
streamlib plan (rules applied: none)
  sub-topology 0: 4 tasks in mapInArrow, input as read (records)
  sub-topology 1: 4 tasks in mapInArrow, input shuffled by key (records)
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Optional

from streamlib.config import StreamsConfig
from streamlib.runtime.encoding import InputEncoding
from streamlib.topics.spec import BackendSpec
from streamlib.topology import SubTopology, Topology, TopologyError

#: Spark conf naming the rules to leave out (comma-separated names, or ``*`` for all)
EXCLUDED_RULES_CONF = "spark.streamlib.plan.excludedRules"


class Runner(Enum):
    """Where a stage's tasks run."""

    #: in ``mapInArrow`` over the stage's input rows (the plain plan)
    ARROW_MAP = "mapInArrow"
    #: in the source's reader, over the rows it reads (``readerStage`` source option)
    READER = "reader"
    #: nowhere: the stage is only Column chains into repartitions, done in the JVM
    NONE = "none"


@dataclass(frozen=True)
class PlannedStage:
    """One sub-topology's place in the plan."""

    sub: SubTopology
    #: its tasks (Spark partitions of its input)
    partitions: int
    #: its input is moved to its key's task (stateful, or reads a repartition)
    shuffled: bool
    #: has windows or suppress: every task runs at every batch (a tick row each)
    time_aware: bool
    #: repartition topics it writes
    writes: frozenset[str] = frozenset()
    #: stages that read what it writes
    readers: int = 0
    runner: Runner = Runner.ARROW_MAP
    #: for :attr:`Runner.NONE`: source node -> the repartition topics its chain feeds
    column_feeds: Optional[dict[str, list[str]]] = None
    #: what the rows its tasks get stand for
    encoding: InputEncoding = InputEncoding.RECORDS
    #: a DataFrame transformation replacing the shuffle by key (a pre-aggregation)
    batch_input: Any = None
    #: repartition topics whose rows its tasks combine per key before Spark's shuffle
    combines: frozenset[str] = frozenset()
    #: repartition topics it writes and reads itself (a foreign-key join of two tables
    #: that share a sub-topology): its tasks run in one Spark task, which hands these
    #: rows from task to task until none is left (spark/tasks.py, ``looping_stage_function``)
    loops: frozenset[str] = frozenset()
    #: a batch of at most this many records runs its tasks in the source's one read task
    #: instead (rules/small_batch_reader.py); 0: never
    in_reader_up_to: int = 0


@dataclass(frozen=True)
class PlanContext:
    """What rules may look at besides the plan."""

    #: resolved for ``config`` (:meth:`Topology.resolve`) by :func:`plan_batch`
    topology: Topology
    config: StreamsConfig
    #: the topics' backend (None: planned without one, e.g. in a doctest)
    backend: Optional[BackendSpec]
    #: tasks of a stateful stage unless its source says otherwise
    num_partitions: int
    #: tasks may run on several executors (not ``local[n]``): stateful ones where their
    #: stores are (spark/placement.py)
    cluster: bool = False


@dataclass(frozen=True)
class PhysicalPlan:
    """The stages in the order they run (every repartition's writer before its reader)."""

    stages: tuple[PlannedStage, ...]
    #: Column chains by source node (:mod:`streamlib.spark.columns`)
    chains: dict = field(default_factory=dict)
    #: topics the source's reader pre-aggregates for windowed counts
    window_counts: dict = field(default_factory=dict)
    #: the rules that rewrote it, in order
    applied: tuple[str, ...] = ()

    @property
    def reader_stage(self) -> Optional[PlannedStage]:
        return next((s for s in self.stages if s.runner is Runner.READER), None)

    @property
    def time_aware(self) -> bool:
        return any(stage.time_aware for stage in self.stages)

    def describe(self) -> str:
        """One line per stage: where its tasks run and how their input reaches them."""
        lines = [f"streamlib plan (rules applied: {', '.join(self.applied) or 'none'})"]
        for stage in self.stages:
            pre_aggregated = stage.encoding not in (InputEncoding.RECORDS, InputEncoding.WINDOW_FOLDS)
            how = ("pre-aggregated" if stage.batch_input is not None or pre_aggregated
                   else "shuffled by key" if stage.shuffled else "as read")
            extra = f", combines {sorted(stage.combines)}" if stage.combines else ""
            if stage.in_reader_up_to:
                extra += f", in the reader for batches of up to {stage.in_reader_up_to:,} records"
            lines.append(f"  sub-topology {stage.sub.id}: {stage.partitions} tasks in {stage.runner.value}, "
                         f"input {how} ({stage.encoding.value}){extra}")
        return "\n".join(lines)

    def with_stage(self, stage: PlannedStage) -> "PhysicalPlan":
        """This plan with ``stage`` in place of the stage of its sub-topology."""
        return replace(self, stages=tuple(stage if s.sub.id == stage.sub.id else s for s in self.stages))

    def writer_of(self, topic: str) -> PlannedStage:
        return next(s for s in self.stages if topic in s.writes)


def stage_order(topology: Topology) -> list[SubTopology]:
    """Sub-topologies so that every repartition's writer comes before its reader; a
    sub-topology that reads a repartition it writes itself is no cycle (its stage hands
    those rows on within the batch), one through another sub-topology is refused."""
    writer_of = {}
    for sub in topology.subtopologies:
        for name in sub.nodes:
            node = topology.nodes[name]
            if node.spec.repartition:
                writer_of[node.params.topic] = sub.id
    ordered: list[SubTopology] = []
    state: dict[int, str] = {}

    def visit(sub: SubTopology) -> None:
        if state.get(sub.id) == "done":
            return
        if state.get(sub.id) == "active":
            raise TopologyError(f"sub-topology {sub.id} depends on itself through a repartition")
        state[sub.id] = "active"
        for topic in sub.repartition_inputs:
            if writer_of[topic] != sub.id:
                visit(topology.subtopologies[writer_of[topic]])
        state[sub.id] = "done"
        ordered.append(sub)

    for sub in topology.subtopologies:
        visit(sub)
    return ordered


def partitions_of(topology: Topology, sub: SubTopology, default: int) -> int:
    """A stage's task count: its source's ``num_partitions`` if set, else ``default``."""
    for name in sub.nodes:
        node = topology.nodes[name]
        if node.spec.source and node.params.num_partitions:
            return node.params.num_partitions
    return default


def writes_of(topology: Topology, sub: SubTopology) -> frozenset[str]:
    return frozenset(topology.nodes[n].params.topic for n in sub.nodes
                     if topology.nodes[n].spec.repartition)


def user_sources(topology: Topology, sub: SubTopology) -> list[str]:
    """The source nodes of ``sub`` that read the application's own topics."""
    return [name for name in sub.nodes if topology.nodes[name].spec.source
            and not topology.nodes[name].params.internal]


def plain_plan(ctx: PlanContext) -> PhysicalPlan:
    """The plan without optimisations (its Column chains are not one: a Column step has
    no Python form, so Spark runs it in the JVM in every plan)."""
    from streamlib.spark.columns import column_chains

    topology = ctx.topology.resolve(ctx.config)
    subs = stage_order(topology)
    loops = {sub.id: writes_of(topology, sub) & set(sub.repartition_inputs) for sub in subs}
    writes = {sub.id: writes_of(topology, sub) - loops[sub.id] for sub in subs}
    stages = []
    for sub in subs:
        readers = sum(1 for other in subs if writes[sub.id] & set(other.repartition_inputs))
        stages.append(PlannedStage(
            sub, partitions_of(topology, sub, ctx.num_partitions),
            shuffled=sub.stateful or bool(sub.repartition_inputs),
            time_aware=any(topology.nodes[name].spec.time_aware for name in sub.nodes),
            writes=writes[sub.id], readers=readers, loops=frozenset(loops[sub.id])))
    return PhysicalPlan(tuple(stages), chains=column_chains(topology, ctx.config))


def plan_batch(ctx: PlanContext, excluded: str = "") -> PhysicalPlan:
    """The plain plan rewritten by every rule not ``excluded`` (see the module doc)."""
    from streamlib.spark.rules import rules_except

    ctx = replace(ctx, topology=ctx.topology.resolve(ctx.config))   # (itself when resolved)
    plan = plain_plan(ctx)
    for rule in rules_except(excluded):
        if rule.applies(plan, ctx):
            plan = replace(rule.rewrite(plan, ctx), applied=plan.applied + (rule.name,))
    return plan
