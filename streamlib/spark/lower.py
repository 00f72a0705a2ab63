"""Lowering: the physical plan of a micro-batch becomes Spark DataFrames.

:mod:`streamlib.spark.plan` decides, once per start of the application, where each
sub-topology's tasks run and how its input reaches them (its rules say where the
plain plan is rewritten for speed); :class:`BatchPlan` turns that plan into the
DataFrame of each batch. A stage's tasks run one streamlib ``Task`` per partition
inside ``mapInArrow`` (with more partitions than Spark has cores, each Spark task runs
its share of them in turn: a Python task costs tens of ms before any row, so a batch
pays one per core), or in the source's reader; rows bound for sink topics are
appended by the tasks themselves, idempotently per (task, batch). The first batch's
DataFrame is kept as a template for the later ones (:mod:`streamlib.spark.plan_template`),
a cache around the lowering.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional

from pyspark import AccumulatorParam
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.storagelevel import StorageLevel

from streamlib.config import StreamsConfig
from streamlib.runtime.batches import is_data_pass
from streamlib.spark import internals, pickled
from streamlib.spark.arrow import COMBINED_DDL, HEADERS_DDL, SOURCE_COLUMNS, SOURCE_DDL
from streamlib.spark.columns import apply_chain, repartition_rows, without_columns
from streamlib.spark.exprs import by_key, once, selected
from streamlib.spark.hashing import hash_partition
from streamlib.spark.plan import (EXCLUDED_RULES_CONF, PlanContext, PlannedStage, Runner, plan_batch,
                                  user_sources)
from streamlib.spark.placement import StickyPlacement, is_cluster
from streamlib.spark.plan_template import PlanTemplate
from streamlib.spark.tasks import (BATCH_PROPERTY, READER_RUNS_PROPERTY, TASK_PARTITION, TICK_TOPIC, StagePlan,
                                   merge_metrics, reader_stage_function, small_batch_reader_function,
                                   stage_function)
from streamlib.spark.undecodable import SkippedCount, handle_undecodable, split_undecodable
from streamlib.topics.spec import BackendSpec
from streamlib.topology import SubTopology, Topology

log = logging.getLogger("streamlib")

#: A batch of at most this many records runs each shuffled stage's tasks in one Spark
#: task, not one per core: a Python task costs Spark 60-100 ms before its first row,
#: far more than a few hundred records cost the tasks, and with one Spark task per
#: stage Spark's FIFO queue of idle Python workers gives it the same worker every
#: batch, where its stores are still open (two tasks race for the workers, and about
#: half of all batches reopened them). A stream task gets the same rows either way.
ONE_TASK_RECORDS = 1_000

#: Spark 4 measures an Arrow batch's size in bytes after every row it writes to a
#: Python task, unless this limit is Int.MaxValue; the check costs about as much as
#: the rest of the transfer. Rows per Arrow batch stay bounded by
#: ``spark.sql.execution.arrow.maxRecordsPerBatch``, as in Spark 3. Set on the query's
#: own session, and only when the user has not set it.
ARROW_MAX_BYTES = ("spark.sql.execution.arrow.maxBytesPerBatch", str(2**31 - 1))


class _MetricsParam(AccumulatorParam):
    def zero(self, value: dict) -> dict:
        return {"tasks": {}}

    def addInPlace(self, a: dict, b: dict) -> dict:
        return merge_metrics(a, b)


@dataclass
class Stage:
    """A planned stage with what its lowering keeps across batches."""

    planned: PlannedStage
    plan: StagePlan
    output: Optional[DataFrame] = field(default=None, repr=False)
    #: the stage function's UDF over the stage's input columns, made at its first batch
    udf: Any = field(default=None, repr=False)

    @property
    def sub(self) -> SubTopology:
        return self.planned.sub

    @property
    def persists_output(self) -> bool:
        """Its output is computed once for all its readers (a re-run would be correct,
        only slower); a stage of Column steps alone has no output of its own."""
        return self.planned.readers > 1 and self.planned.runner is not Runner.NONE


def _source_columns(rows: DataFrame) -> DataFrame:
    """``rows`` with the source columns only, in their order."""
    return selected(rows, "source columns", lambda: list(SOURCE_COLUMNS))


class BatchPlan:
    """Builds and runs the Spark plan of one micro-batch (called from ``foreachBatch``)."""

    def __init__(self, spark: SparkSession, topology: Topology, config: StreamsConfig,
                 backend: Optional[BackendSpec], input_partitions: int, excluded_rules: Optional[str] = None):
        self.spark = spark
        self.topology = topology = topology.resolve(config)  # ``self`` when the app resolved it
        self.config = config
        self.backend = backend
        self.num_partitions = config.num_partitions or input_partitions
        #: Spark's task slots (local[2]: 2)
        self.cores = spark.sparkContext.defaultParallelism
        if excluded_rules is None:
            excluded_rules = spark.conf.get(EXCLUDED_RULES_CONF, "") or ""
        #: the physical plan (:mod:`streamlib.spark.plan`)
        self.physical = plan_batch(PlanContext(topology, config, backend, self.num_partitions, is_cluster(spark)),
                                   excluded_rules)
        internal = frozenset(t for sub in topology.subtopologies for t in sub.repartition_inputs)
        executed = without_columns(topology, self.chains) if self.chains else topology
        # One plan per start of the application: its id keeps tasks from reusing stores
        # left open by an earlier run (whose state may since have been reset or deleted).
        run_id = uuid.uuid4().hex
        self.stages = [Stage(planned, StagePlan(executed, config, backend, planned.sub.id, planned.partitions,
                                                internal, run_id, planned.combines, planned.encoding,
                                                planned.loops))
                       for planned in self.physical.stages]
        self.metrics = spark.sparkContext.accumulator({"tasks": {}}, _MetricsParam())
        #: the stage whose tasks the source's reader runs, if any (rules/reader_stage.py)
        self.reader_stage = next((s for s in self.stages if s.planned.runner is Runner.READER), None)
        #: the stage a small batch runs in the source's read task, if any (rules/small_batch_reader.py)
        self.small_batch_stage = next((s for s in self.stages if s.planned.in_reader_up_to), None)
        #: the batch being built runs it there; how many passes have
        self._in_reader = False
        self.passes_in_reader = 0
        self._last_result: Optional[DataFrame] = None
        self.time_aware = self.physical.time_aware
        self._tick_keys: dict[int, list[bytes]] = {}
        #: partitions -> (the Java session it was made in, the tick frame)
        self._tick_frames: dict[int, tuple[Any, DataFrame]] = {}
        #: the first batch's plan, for the later ones (spark/plan_template.py), per number
        #: of Spark tasks its shuffled stages run in (see ONE_TASK_RECORDS) and whether the
        #: small-batch stage runs in the reader
        self._templates: dict[tuple[int, bool], PlanTemplate] = {}
        #: Spark tasks per shuffled stage in the batch being built
        self._slots = self.cores
        #: where stateful tasks run, on a cluster (spark/placement.py)
        self.placement = (StickyPlacement.start(spark, config.num_standby_replicas)
                          if any(self._placed(s) for s in self.stages) else None)
        if self.placement is not None and self.placement.standbys is not None:
            self.placement.standbys.plans = {s.sub.id: s.plan for s in self.stages if self._placed(s)}
        #: the inputs of placed stages in the batch's plan (their observed metrics are their own)
        self._placed_inputs: list[DataFrame] = []
        # Not with a persisted stage output: it is the batch's own; nor with placed
        # stages: each batch's placed input is an RDD of that batch's rows.
        self._reuse_plans = not any(stage.persists_output for stage in self.stages) and self.placement is None

    @property
    def chains(self) -> dict:
        """Column chains by source node (the plan's)."""
        return self.physical.chains

    @property
    def window_counts(self) -> dict:
        """Topics the source's reader pre-aggregates (the plan's)."""
        return self.physical.window_counts

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

    def build(self, source: DataFrame, batch_id: int, stream_time: int = -1,
              records: Optional[int] = None) -> DataFrame:
        """A DataFrame whose computation runs every stage of the batch once; its tasks
        first advance to the application's ``stream_time``, then commit their stores and
        append their sink rows themselves. ``records``: how many the batch holds, if
        known (a small batch runs each shuffled stage in one Spark task)."""
        # A key must reach the same task in every batch: no adaptive execution (it
        # coalesces small shuffles), and pre-aggregations shuffle into exactly the
        # stateful stages' partition count, hashed like repartition(n, key). The
        # batch's session is the query's own clone, so this touches no other query.
        conf = source.sparkSession.conf
        conf.set("spark.sql.adaptive.enabled", "false")
        conf.set("spark.sql.shuffle.partitions", str(self.num_partitions))
        if conf.get(ARROW_MAX_BYTES[0], None) is None:
            conf.set(*ARROW_MAX_BYTES)
        # Read by every stage function of the batch's job (tasks.BATCH_PROPERTY); set in
        # this thread, which also runs the job.
        source.sparkSession.sparkContext.setLocalProperty(BATCH_PROPERTY, f"{batch_id}:{stream_time}")
        self._batch_id = batch_id
        self._slots = 1 if records is not None and records <= ONE_TASK_RECORDS else self.cores
        small = self.small_batch_stage
        self._in_reader = (small is not None and is_data_pass(batch_id) and records is not None
                           and 0 < records <= small.planned.in_reader_up_to)
        source.sparkSession.sparkContext.setLocalProperty(READER_RUNS_PROPERTY,
                                                          str(small.sub.id) if self._in_reader else "")
        template = self._templates.get((self._slots, self._in_reader))
        if template is not None:
            try:
                result = template.instantiate(source)
            except Exception as exc:  # noqa: BLE001 - the plan built step by step is always right
                log.warning("reusing the first batch's plan failed (%s); building every batch's plan anew", exc)
                result = None
                self._templates.clear()
                self._reuse_plans = False
            if result is not None:
                return result
        result = self._build_plan(source)
        # Not from a plan with per-batch parts: a dead-letter handler is bound to its
        # batch (and a persisted stage output is the batch's own: see __init__). (A pass
        # without records reads its source through a limit: no template from it, the
        # last one stays.)
        if self._reuse_plans and not self._undecodable:
            captured = PlanTemplate.capture(result, source)
            if captured is not None:
                self._templates[(self._slots, self._in_reader)] = captured
        return result

    def _build_plan(self, source: DataFrame) -> DataFrame:
        """The batch's DataFrame, step by step."""
        outputs: dict[str, DataFrame] = {}  # repartition topic -> rows for it
        terminal: list[DataFrame] = []  # outputs of stages nothing reads (empty: tasks write sinks)
        self._undecodable: list[DataFrame] = []  # handlers of rows Column steps cannot decode
        self._skipped: list[SkippedCount] = []  # counts of the rows they drop
        self._placed_inputs = []
        for stage in self.stages:
            planned = stage.planned
            if planned.runner is Runner.NONE:
                for name, topics in planned.column_feeds.items():
                    rows = self._source_rows(source, name)
                    for topic in topics:
                        tagged = repartition_rows(rows, topic)
                        outputs[topic] = outputs[topic].unionByName(tagged) if topic in outputs else tagged
                continue
            if stage is self.reader_stage or (self._in_reader and stage is self.small_batch_stage):
                # Its tasks ran in the source's reader: the source's rows are their output.
                out = source if stage.plan.combined_topics else _source_columns(source)
            else:
                out = self._run_stage(stage, self._input(stage, source, outputs))
            if stage.persists_output:
                out = out.persist(StorageLevel.MEMORY_AND_DISK)
            stage.output = out
            for topic in planned.writes:
                rows_for = out.where(once(("topic is", topic), lambda: F.col("topic") == topic))
                if stage.plan.combined_topics and topic not in stage.plan.combined_topics:
                    rows_for = _source_columns(rows_for)
                outputs[topic] = rows_for
            if not planned.readers:
                terminal.append(out)
        terminal.extend(self._undecodable)
        result = terminal[0]
        for part in terminal[1:]:
            result = result.unionByName(part)
        return result

    def _input(self, stage: Stage, source: DataFrame, outputs: dict[str, DataFrame]) -> DataFrame:
        """A stage's rows: of its source topics and the repartitions it reads, shuffled
        into its tasks' partitions if it needs that, with each row's task partition."""
        sub, planned = stage.sub, stage.planned
        names = user_sources(self.topology, sub)
        if planned.shuffled and planned.batch_input is None:   # rows in any order, tasks by key
            parts = self._user_rows(source, names)
        else:
            parts = [self._source_rows(source, name) for name in names]
        parts.extend(outputs[t] for t in sub.repartition_inputs if t not in planned.loops)
        if planned.time_aware:
            parts.append(self._ticks(source.sparkSession, stage.plan.num_partitions))
        rows = parts[0]
        for extra in parts[1:]:
            # ticks have no records/weight of combined rows: null, counted as none
            rows = rows.unionByName(extra, allowMissingColumns=True)
        if planned.batch_input is not None:
            rows = planned.batch_input(rows)
        elif planned.shuffled:
            rows = by_key(rows, stage.plan.num_partitions)
        # The task's partition as the stage sees it: inside a union of stages,
        # TaskContext.partitionId() counts the union's partitions instead.
        rows = rows.withColumn(TASK_PARTITION, once(TASK_PARTITION, F.spark_partition_id))
        if planned.loops:
            # one Spark task runs all its tasks: it hands them the rows they send each other
            return rows.coalesce(1)
        if self.placement is not None and self._placed(stage):
            # Each stream task's rows prefer the executor with its stores (packed per core there).
            self._placed_inputs.append(rows)
            return self.placement.place(rows, stage.sub.id, stage.plan.num_partitions)
        if planned.shuffled and stage.plan.num_partitions > self._slots:
            # A Python task costs 50-70 ms even without rows: one per core (one in a
            # small batch), each running its share of the stage's tasks, not waves of them.
            rows = rows.coalesce(self._slots)
        return rows

    @staticmethod
    def _placed(stage: Stage) -> bool:
        """Whether a stage's tasks are placed where their stores are: stateful ones,
        whose input is shuffled into one partition per task."""
        return (stage.sub.stateful and stage.planned.shuffled and stage.planned.runner is Runner.ARROW_MAP
                and not stage.planned.loops)

    def reader_stage_option(self) -> Optional[str]:
        """The source's ``readerStage`` option (:mod:`streamlib.spark.source`): the
        function of the reader stage, or of the stage small batches run in the reader,
        reporting to this plan's metrics."""
        if self.reader_stage is not None:
            return pickled.encode(reader_stage_function(self.reader_stage.plan, self.metrics.add))
        if self.small_batch_stage is not None:
            return pickled.encode(small_batch_reader_function(self.small_batch_stage.plan, self.metrics.add,
                                                              self.small_batch_stage.planned.time_aware))
        return None

    def _run_stage(self, stage: Stage, rows: DataFrame) -> DataFrame:
        """``rows.mapInArrow(the stage's function)``, with the function's UDF made once.
        ``mapInArrow`` makes it anew every call: it pickles the stage's plan and hands it
        to the JVM, 15 ms a batch. The UDF refers to its input columns by name, so one
        serves every batch's plan (the columns of a stage's input never change)."""
        if stage.udf is None:
            ddl = f"{SOURCE_DDL}, {COMBINED_DDL}" if stage.plan.combined_topics else SOURCE_DDL
            stage.udf = internals.ArrowStage(stage_function(stage.plan, self.metrics.add), ddl, rows.columns)
        return stage.udf.apply(rows)

    def _user_rows(self, source: DataFrame, node_names: list[str]) -> list[DataFrame]:
        """The batch's rows of a shuffled stage's source nodes. Those without a Column
        chain or pre-aggregated topics are one filter of ``source``: a filter per node
        would be a union of scans, each reading (in Python, and into the JVM) every topic
        of the batch again. (Where rows go before the shuffle does not matter: each goes
        to its key's task, which orders its rows itself.)"""
        plain = [n for n in node_names if not self.chains.get(n)
                 and not set(self.topology.nodes[n].params.topics) & set(self.window_counts)]
        parts = [self._source_rows(source, n) for n in node_names if len(plain) < 2 or n not in plain]
        if len(plain) > 1:
            parts.insert(0, self._topic_rows(source, tuple(t for n in plain
                                                            for t in self.topology.nodes[n].params.topics)))
        return parts

    def _topic_rows(self, source: DataFrame, topics: tuple[str, ...]) -> DataFrame:
        """The batch's rows of ``topics``."""
        # (the source reads the application's topics: all of them are these, often)
        rows = source if set(topics) == set(self.topology.source_topics()) else \
            source.where(once(("topic in", topics), lambda: F.col("topic").isin(list(topics))))
        if (self.window_counts and not set(topics) <= set(self.window_counts)) or self.small_batch_stage:
            rows = _source_columns(rows)   # (without the reader's columns of other rows)
        return rows

    def _source_rows(self, source: DataFrame, node_name: str) -> DataFrame:
        """The batch's rows of one source node, through its Column chain if it has one."""
        node = self.topology.nodes[node_name]
        rows = self._topic_rows(source, tuple(node.params.topics))
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

    @property
    def last_plan(self) -> str:
        """streamlib's plan, then Spark's (logical and physical) of the last batch that ran."""
        if self._last_result is None:
            return "no micro-batch has run yet"
        # Rendered on demand: the plan's text costs tens of ms, each batch.
        return f"{self.physical.describe()}\n\n{internals.plan_text(self._last_result)}"

    def run(self, source: DataFrame, batch_id: int, stream_time: int = -1, records: Optional[int] = None) -> None:
        """Run the batch (of ``records``, if known): every stage, each task writing its
        own sink rows."""
        try:
            result = self.build(source, batch_id, stream_time, records)
            self._last_result = result
            result.collect()  # no rows: terminal stages only write to sinks
            self.passes_in_reader += self._in_reader
            if self._skipped:
                observed = internals.observed_metrics(result)
                for placed in self._placed_inputs:   # planned apart from the result
                    if observed is not None:
                        observed.update(internals.observed_metrics(placed) or {})
                for skipped in self._skipped:
                    skipped.report(observed, self.metrics.add)
        finally:
            for stage in self.stages:
                if stage.output is not None and stage.output.is_cached:
                    stage.output.unpersist()
                stage.output = None
