"""The compiler: a ``Topology`` becomes the Spark plan of one micro-batch.

Each sub-topology is a stage: its input is the batch's rows of its source topics
plus the rows upstream stages emitted for its repartition topics; a stateful stage
(or one behind a repartition) first shuffles its input by key into
``num_partitions`` Spark partitions — the role of Kafka Streams' repartition topic —
and then runs one streamlib ``Task`` per partition inside ``mapInArrow`` (with more
partitions than Spark has cores, each Spark task runs its share of them in turn: a
Python task costs tens of ms before any row, so a batch pays one per core). Stateless
steps of a sub-topology are fused into that one Arrow map; a stateless stage that
alone reads the application's topics runs in the source's reader instead (see
:meth:`BatchPlan._reader_stage`). Rows bound for sink topics are appended by the
tasks themselves, idempotently per (task, batch).
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from pyspark import AccumulatorParam
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.storagelevel import StorageLevel

from streamlib.config import StreamsConfig
from streamlib.spark.arrow import COMBINED_DDL, HEADERS_DDL, SOURCE_COLUMNS, SOURCE_DDL
from streamlib.spark.columns import (apply_chain, chain_feeds_only, column_chains, repartition_rows,
                                     without_columns)
from streamlib.topics.spec import BackendSpec
from streamlib.spark.exprs import by_key, once, selected
from streamlib.spark.hashing import hash_partition
from streamlib.spark.lowerings import BatchInput, is_column_step, stage_batch_input
from streamlib.spark.plan_template import PlanTemplate
from streamlib.spark.preaggregate import PreAggregate  # (also registers the count's lowering)
from streamlib.spark import internals, kafka_source, pickled
from streamlib.spark.tasks import (BATCH_PROPERTY, TASK_PARTITION, TICK_TOPIC, StagePlan, merge_metrics,
                                   reader_stage_function, stage_function)
from streamlib.spark.undecodable import SkippedCount, handle_undecodable, split_undecodable
from streamlib.spark.window_counts import window_count_inputs
from streamlib.topology import SubTopology, Topology, TopologyError

log = logging.getLogger("streamlib")


class _MetricsParam(AccumulatorParam):
    def zero(self, value: dict) -> dict:
        return {"tasks": {}}

    def addInPlace(self, a: dict, b: dict) -> dict:
        return merge_metrics(a, b)


@dataclass
class Stage:
    sub: SubTopology
    plan: StagePlan
    shuffled: bool
    jvm_only: Optional[dict[str, list[str]]] = None
    writes: frozenset[str] = frozenset()  # repartition topics this stage writes
    readers: int = 0  # stages that read what this stage writes
    batch_input: Optional[BatchInput] = None  # e.g. a cached count's pre-aggregation
    time_aware: bool = False  # has windows or suppress: every task runs at every batch
    output: Optional[DataFrame] = field(default=None, repr=False)
    #: the stage function's UDF over the stage's input columns, made at its first batch
    udf: Any = field(default=None, repr=False)

    @property
    def persists_output(self) -> bool:
        """Its output is computed once for all its readers (a re-run would be correct,
        only slower); a stage of Column steps alone has no output of its own."""
        return self.readers > 1 and self.jvm_only is None


def _source_columns(rows: DataFrame) -> DataFrame:
    """``rows`` with the source columns only, in their order."""
    return selected(rows, "source columns", lambda: list(SOURCE_COLUMNS))


def stage_order(topology: Topology) -> list[SubTopology]:
    """Sub-topologies so that every repartition's writer comes before its reader."""
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
            visit(topology.subtopologies[writer_of[topic]])
        state[sub.id] = "done"
        ordered.append(sub)

    for sub in topology.subtopologies:
        visit(sub)
    return ordered


class BatchPlan:
    """Builds and runs the Spark plan of one micro-batch (called from ``foreachBatch``)."""

    def __init__(self, spark: SparkSession, topology: Topology, config: StreamsConfig,
                 backend: BackendSpec, input_partitions: int):
        self.spark = spark
        self.topology = topology = topology.resolve(config)  # ``self`` when the app resolved it
        self.config = config
        self.backend = backend
        self.num_partitions = config.num_partitions or input_partitions
        #: Spark's task slots (local[2]: 2)
        self.cores = spark.sparkContext.defaultParallelism
        internal = frozenset(t for sub in topology.subtopologies for t in sub.repartition_inputs)
        self.internal_topics = internal
        self.chains = column_chains(topology, config)
        executed = without_columns(topology, self.chains) if self.chains else topology
        self.stages = []
        # One plan per start of the application: its id keeps tasks from reusing stores
        # left open by an earlier run (whose state may since have been reset or deleted).
        run_id = uuid.uuid4().hex
        subs = stage_order(topology)
        jvm_only = {sub.id: self._column_chains_only(sub) for sub in subs}
        batch_inputs = {sub.id: stage_batch_input(topology, sub, config)
                        if self._partitions_of(sub) == self.num_partitions else None for sub in subs}
        batch_inputs, combined = self._combined_by_writers(subs, jvm_only, batch_inputs)
        for sub in subs:
            n = self._partitions_of(sub)
            plan = StagePlan(executed, config, backend, sub.id, n, internal, run_id,
                             frozenset(combined.get(sub.id, ())))
            time_aware = any(topology.nodes[name].spec.time_aware for name in sub.nodes)
            self.stages.append(Stage(sub, plan, shuffled=sub.stateful or bool(sub.repartition_inputs),
                                     jvm_only=jvm_only[sub.id], batch_input=batch_inputs[sub.id],
                                     time_aware=time_aware))
        #: topics a reader may pre-aggregate for windowed counts (spark/window_counts.py)
        self.window_counts = window_count_inputs(
            topology, config, {stage.sub.id: stage.plan.num_partitions for stage in self.stages})
        #: whether the batch's source rows have the pre-aggregated rows' columns
        self._window_columns: Optional[bool] = None
        for stage in self.stages:
            stage.writes = frozenset(self._writes(stage.sub))
            stage.readers = sum(1 for s in self.stages if stage.writes & set(s.sub.repartition_inputs))
        self.metrics = spark.sparkContext.accumulator({"tasks": {}}, _MetricsParam())
        #: the stage whose tasks the source's reader runs, if any (see :meth:`_reader_stage`)
        self.reader_stage = self._reader_stage()
        self._last_result: Optional[DataFrame] = None
        self.time_aware = any(stage.time_aware for stage in self.stages)
        self._tick_keys: dict[int, list[bytes]] = {}
        #: partitions -> (the Java session it was made in, the tick frame)
        self._tick_frames: dict[int, tuple[Any, DataFrame]] = {}
        #: the first batch's plan, for the later ones (spark/plan_template.py)
        self._template: Optional[PlanTemplate] = None
        # Not with a persisted stage output: it is the batch's own.
        self._reuse_plans = not any(stage.persists_output for stage in self.stages)

    def _combined_by_writers(self, subs: list[SubTopology], jvm_only: dict[int, Optional[dict]],
                             batch_inputs: dict[int, Optional[BatchInput]]
                             ) -> tuple[dict[int, Optional[BatchInput]], dict[int, set[str]]]:
        """``(batch inputs, topics each Python stage's tasks combine)``: a pre-aggregated
        count whose repartition a Python stage writes gets that stage's rows combined per
        key (and its batch input becomes the merging kind). Spark would combine them
        before its shuffle anyway, and a task hands the JVM far fewer rows."""
        writer_of = {topic: sub.id for sub in subs for topic in self._writes(sub)}
        inputs = dict(batch_inputs)
        combined: dict[int, set[str]] = {}
        for sub_id, batch_input in batch_inputs.items():
            if isinstance(batch_input, PreAggregate) and jvm_only[writer_of[batch_input.topic]] is None:
                inputs[sub_id] = replace(batch_input, combined=True)
                combined.setdefault(writer_of[batch_input.topic], set()).add(batch_input.topic)
        return inputs, combined

    def _column_chains_only(self, sub: SubTopology) -> Optional[dict[str, list[str]]]:
        """For a sub-topology that is nothing but Column chains into repartitions: the
        repartition topics each chain's source feeds (its Python stage is skipped)."""
        feeds: dict[str, list[str]] = {}
        for name in sub.nodes:
            node = self.topology.nodes[name]
            if node.spec.source:
                chain = self.chains.get(name)
                topics = chain_feeds_only(self.topology, chain, self.config) if chain else None
                if topics is None:
                    return None
                feeds[name] = topics
            elif not (is_column_step(node) or node.spec.repartition):
                return None
        return feeds

    def _partitions_of(self, sub: SubTopology) -> int:
        for name in sub.nodes:
            node = self.topology.nodes[name]
            if node.spec.source and node.params.num_partitions:
                return node.params.num_partitions
        return self.num_partitions

    def tick_keys(self, n: int) -> list[bytes]:
        """For each partition ``p`` of ``n``, a key that Spark's hash partitioning (as in
        ``repartition(n, "key")``) sends to ``p`` (:mod:`streamlib.spark.hashing`)."""
        if n not in self._tick_keys:
            keys: dict[int, bytes] = {}
            for i in range(64 * n):
                keys.setdefault(hash_partition(str(i).encode(), n), str(i).encode())
            if len(keys) != n:
                raise RuntimeError(f"no tick key found for some of {n} partitions")
            self._tick_keys[n] = [keys[p] for p in range(n)]
        return self._tick_keys[n]

    def _ticks(self, session: SparkSession, n: int) -> DataFrame:
        """One row per partition, so every time-aware task runs even without records.

        A plan of the JVM alone, in one Spark partition: rows made by
        ``createDataFrame`` from Python would pass through a Python worker per
        partition, a task of 50-400 ms each batch, in a second wave on two cores.
        The same DataFrame serves every batch of a query. It is kept per Java session:
        ``foreachBatch`` wraps the query's one session in a new Python ``SparkSession``
        every batch, so a key by the Python object built (and kept) a frame per batch,
        80-90 ms of py4j calls each."""
        cached = self._tick_frames.get(n)
        if cached is None or not internals.same_session(cached[0], session):
            keys = F.array(*(F.lit(k) for k in self.tick_keys(n)))
            partition = F.col("id").cast("int")
            frame = session.range(0, n, 1, numPartitions=1).select(
                F.lit(TICK_TOPIC).alias("topic"), partition.alias("partition"),
                F.lit(0).cast("long").alias("offset"), F.lit(-1).cast("long").alias("timestamp"),
                F.element_at(keys, partition + 1).alias("key"), F.lit(None).cast("binary").alias("value"),
                F.array().cast(HEADERS_DDL).alias("headers"))
            cached = self._tick_frames[n] = (internals.session_token(session), frame)
        return cached[1]

    def build(self, source: DataFrame, batch_id: int, stream_time: int = -1) -> DataFrame:
        """A DataFrame whose computation runs every stage of the batch once; its tasks
        first advance to the application's ``stream_time``, then commit their stores and
        append their sink rows themselves."""
        # A key must reach the same task in every batch: no adaptive execution (it
        # coalesces small shuffles), and pre-aggregations shuffle into exactly the
        # stateful stages' partition count, hashed like repartition(n, key). The
        # batch's session is the query's own clone, so this touches no other query.
        conf = source.sparkSession.conf
        conf.set("spark.sql.adaptive.enabled", "false")
        conf.set("spark.sql.shuffle.partitions", str(self.num_partitions))
        # Read by every stage function of the batch's job (tasks.BATCH_PROPERTY); set in
        # this thread, which also runs the job.
        source.sparkSession.sparkContext.setLocalProperty(BATCH_PROPERTY, f"{batch_id}:{stream_time}")
        self._batch_id = batch_id
        if self._template is not None:
            try:
                result = self._template.instantiate(source)
            except Exception as exc:  # noqa: BLE001 - the plan built step by step is always right
                log.warning("reusing the first batch's plan failed (%s); building every batch's plan anew", exc)
                result = self._template = None
                self._reuse_plans = False
            if result is not None:
                return result
        result = self._build_plan(source)
        # Not from a plan with per-batch parts: a dead-letter handler is bound to its
        # batch (and a persisted stage output is the batch's own: see __init__). (A pass
        # without records reads its source through a limit: no template from it, the
        # last one stays.)
        if self._reuse_plans and not self._undecodable:
            self._template = PlanTemplate.capture(result, source) or self._template
        return result

    def _build_plan(self, source: DataFrame) -> DataFrame:
        """The batch's DataFrame, step by step."""
        outputs: dict[str, DataFrame] = {}  # repartition topic -> rows for it
        terminal: list[DataFrame] = []  # outputs of stages nothing reads (empty: tasks write sinks)
        self._undecodable: list[DataFrame] = []  # handlers of rows Column steps cannot decode
        self._skipped: list[SkippedCount] = []  # counts of the rows they drop
        for stage in self.stages:
            if stage.jvm_only is not None:
                for name, topics in stage.jvm_only.items():
                    rows = self._source_rows(source, name)
                    for topic in topics:
                        tagged = repartition_rows(rows, topic)
                        outputs[topic] = outputs[topic].unionByName(tagged) if topic in outputs else tagged
                continue
            if stage is self.reader_stage:
                # Its tasks ran in the source's reader: the source's rows are their output.
                out = source if stage.plan.combined_topics else _source_columns(source)
            else:
                out = self._run_stage(stage, self._input(stage, source, outputs))
            if stage.persists_output:
                out = out.persist(StorageLevel.MEMORY_AND_DISK)
            stage.output = out
            for topic in stage.writes:
                rows_for = out.where(once(("topic is", topic), lambda: F.col("topic") == topic))
                if stage.plan.combined_topics and topic not in stage.plan.combined_topics:
                    rows_for = _source_columns(rows_for)
                outputs[topic] = rows_for
            if not stage.readers:
                terminal.append(out)
        terminal.extend(self._undecodable)
        result = terminal[0]
        for part in terminal[1:]:
            result = result.unionByName(part)
        return result

    def _input(self, stage: Stage, source: DataFrame, outputs: dict[str, DataFrame]) -> DataFrame:
        """A stage's rows: of its source topics and the repartitions it reads, shuffled
        into its tasks' partitions if it needs that, with each row's task partition."""
        sub = stage.sub
        parts = [self._source_rows(source, name) for name in self._user_sources(sub)]
        parts.extend(outputs[t] for t in sub.repartition_inputs)
        if stage.time_aware:
            parts.append(self._ticks(source.sparkSession, stage.plan.num_partitions))
        rows = parts[0]
        for extra in parts[1:]:
            # ticks have no records/weight of combined rows: null, counted as none
            rows = rows.unionByName(extra, allowMissingColumns=True)
        if stage.batch_input is not None:
            rows = stage.batch_input(rows)
        elif stage.shuffled:
            rows = by_key(rows, stage.plan.num_partitions)
        # The task's partition as the stage sees it: inside a union of stages,
        # TaskContext.partitionId() counts the union's partitions instead.
        rows = rows.withColumn(TASK_PARTITION, once(TASK_PARTITION, F.spark_partition_id))
        if stage.shuffled and stage.plan.num_partitions > self.cores:
            # A Python task costs 50-70 ms even without rows: one per core, each
            # running its share of the stage's tasks, not waves of them.
            rows = rows.coalesce(self.cores)
        return rows

    def _reader_stage(self) -> Optional[Stage]:
        """The stage the source's reader runs itself (:meth:`reader_stage_option`), if any:
        the one stage that reads the application's topics, when it is stateless, needs
        no shuffle, ticks or Column steps, and feeds at most one repartition, read by
        one stage (else the source would be read, and the stage run, once per use).

        Under ``mapInArrow`` its input would go from the reader's Python worker into the
        JVM and on to a second Python worker; run by the reader, only its output reaches
        the JVM (a count's combined rows, say: one per key and task). Not with Kafka
        (Spark's own source reads it) nor beside windowed counts the reader pre-aggregates."""
        if self.window_counts or self.backend is None or kafka_source.is_kafka(self.backend.url):
            return None
        readers = [stage for stage in self.stages if self._user_sources(stage.sub)]
        if len(readers) != 1:
            return None
        stage = readers[0]
        # (a stage of Column steps alone, jvm_only, has chains on its sources too)
        if (stage.shuffled or stage.time_aware or stage.readers > 1 or len(stage.writes) > 1
                or any(self.chains.get(name) for name in self._user_sources(stage.sub))):
            return None
        return stage

    def _user_sources(self, sub: SubTopology) -> list[str]:
        """The source nodes of ``sub`` that read the application's own topics."""
        return [name for name in sub.nodes if self.topology.nodes[name].spec.source
                and not self.topology.nodes[name].params.internal]

    def reader_stage_option(self) -> Optional[str]:
        """The source's ``readerStage`` option (:mod:`streamlib.spark.source`): the
        function of :meth:`_reader_stage`'s stage, reporting to this plan's metrics."""
        if self.reader_stage is None:
            return None
        return pickled.encode(reader_stage_function(self.reader_stage.plan, self.metrics.add))

    def _run_stage(self, stage: Stage, rows: DataFrame) -> DataFrame:
        """``rows.mapInArrow(the stage's function)``, with the function's UDF made once.
        ``mapInArrow`` makes it anew every call: it pickles the stage's plan and hands it
        to the JVM, 15 ms a batch. The UDF refers to its input columns by name, so one
        serves every batch's plan (the columns of a stage's input never change)."""
        if stage.udf is None:
            ddl = f"{SOURCE_DDL}, {COMBINED_DDL}" if stage.plan.combined_topics else SOURCE_DDL
            stage.udf = internals.ArrowStage(stage_function(stage.plan, self.metrics.add), ddl, rows.columns)
        return stage.udf.apply(rows)

    def _source_rows(self, source: DataFrame, node_name: str) -> DataFrame:
        """The batch's rows of one source node, through its Column chain if it has one."""
        node = self.topology.nodes[node_name]
        topics = tuple(node.params.topics)
        # (the source reads the application's topics: all of them are this node's, often)
        rows = source if set(topics) == set(self.topology.source_topics()) else \
            source.where(once(("topic in", topics), lambda: F.col("topic").isin(list(topics))))
        if self._window_columns is None:
            self._window_columns = "window_start" in source.columns
        if self._window_columns and not set(topics) <= set(self.window_counts):
            rows = _source_columns(rows)
        chain = self.chains.get(node_name)
        if not chain:
            return rows
        rows, bad, skipped = split_undecodable(rows, node, self.config)
        if skipped is not None:
            self._skipped.append(skipped)
        if bad is not None:
            handler = handle_undecodable(node, self.config, self.backend, self._batch_id, self.metrics.add)
            # One Python task per batch for all of them (usually none), not one per partition.
            self._undecodable.append(bad.coalesce(1).mapInArrow(handler, SOURCE_DDL))
        return apply_chain(rows, chain, self.topology, self.config)

    def _writes(self, sub: SubTopology) -> set[str]:
        return {self.topology.nodes[n].params.topic for n in sub.nodes
                if self.topology.nodes[n].spec.repartition}

    @property
    def last_plan(self) -> str:
        """The Spark plan (logical and physical) of the last batch that ran."""
        if self._last_result is None:
            return "no micro-batch has run yet"
        # Rendered on demand: the plan's text costs tens of ms, each batch.
        return internals.plan_text(self._last_result)

    def run(self, source: DataFrame, batch_id: int, stream_time: int = -1) -> None:
        """Run the batch: every stage, each task writing its own sink rows."""
        try:
            result = self.build(source, batch_id, stream_time)
            self._last_result = result
            result.collect()  # no rows: terminal stages only write to sinks
            if self._skipped:
                observed = internals.observed_metrics(result)
                for skipped in self._skipped:
                    skipped.report(observed, self.metrics.add)
        finally:
            for stage in self.stages:
                if stage.output is not None and stage.output.is_cached:
                    stage.output.unpersist()
                stage.output = None
