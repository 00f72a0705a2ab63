"""What runs inside a Spark task: one streamlib ``Task`` over one partition's rows.

Pure functions of picklable inputs, shipped to executors by ``mapInArrow``. A task's
stores stay open after a committed batch for its next batch in the same (reused)
Python worker; when Spark runs that batch in another worker, the opener asks the
holder to release them (:mod:`streamlib.state.cache`), and the RocksDB lock hands over.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext

from streamlib.config import StreamsConfig
from streamlib.runtime.encoding import InputEncoding
from streamlib.runtime.order import processing_order
from streamlib.runtime.task import Task, paused_gc, task_id
from streamlib.spark.arrow import SOURCE_ARROW_SCHEMA, constant_int32, split_by_partition
from streamlib.spark.changelog_positions import POSITIONS_PROPERTY, positions_of
from streamlib.spark.daemon import start_worker_task
from streamlib.spark.hashing import SEED, hash_partitions
from streamlib.spark.preaggregate import combine_task_rows
from streamlib.spark.sink import QUERY_ID_PROPERTY
from streamlib.topics.spec import BackendSpec
from streamlib.state import open_task_stores
from streamlib.state.cache import STORE_CACHE
from streamlib.state.global_replica import open_global_replicas
from streamlib.time import now_millis
from streamlib.topology import Topology

#: Rows between stages and to sinks have the source rows' shape: for a repartition,
#: ``partition``/``offset`` say which task emitted the row and in what order (the
#: order the next task restores); for a sink, ``partition`` is the target or null.
STAGE_SCHEMA = SOURCE_ARROW_SCHEMA
#: Column carrying the task's partition into ``mapInArrow`` (see spark/lower.py).
TASK_PARTITION = "task_partition"
#: Spark local property the lowering sets before a batch's job: ``"<batch id>:<stream
#: time>"``. One stage function, pickled once, then serves every batch.
BATCH_PROPERTY = "streamlib.batch"
#: Spark local property the lowering sets before a batch's job: the sub-topology whose
#: tasks the source's read task runs in this job (a small batch:
#: spark/rules/small_batch_reader.py), or empty.
READER_RUNS_PROPERTY = "streamlib.readerRuns"
#: Topic of the one row the lowering sends every time-aware task in every batch, so that
#: a task whose partition got no records still runs (and closes its windows).
TICK_TOPIC = "__streamlib_tick__"


@dataclass(frozen=True)
class StagePlan:
    """Everything a Spark task needs to run one sub-topology for one batch."""

    topology: Topology
    config: StreamsConfig
    backend: BackendSpec
    sub_id: int
    num_partitions: int
    internal_topics: frozenset[str]
    #: names one start of the application: stores kept open between batches serve
    #: only the run that opened them (see :mod:`streamlib.state.cache`)
    run_id: str = ""
    #: repartition topics whose rows this stage's tasks combine per key before Spark
    #: gets them (inputs of pre-aggregated counts): its rows then have
    #: ``records``/``weight`` columns (:func:`~streamlib.spark.preaggregate.combine_task_rows`)
    combined_topics: frozenset[str] = frozenset()
    #: what the rows its tasks get stand for (:mod:`streamlib.spark.plan` declares it)
    encoding: InputEncoding = InputEncoding.RECORDS
    #: repartition topics the stage reads and writes itself (``PlannedStage.loops``)
    loops: frozenset[str] = frozenset()


def stage_function(plan: StagePlan, report: Callable[[dict], None]
                   ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of one stage, for every batch: each run takes its
    (internal) batch id and the application's stream time, to which its tasks first
    advance, from the job's :data:`BATCH_PROPERTY`; ``report(metrics)`` is called once
    per task (an accumulator's ``add``)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        start_worker_task()
        received = [b for b in batches if b.num_rows]
        if not received:  # no input, nothing to change: the stores stay as they are
            return
        batch_id, stream_time, sink_producer = batch_context(plan)
        table = pa.Table.from_batches(received)
        rows = stage_rows(table)
        request_stores_early(plan, pc.unique(table.column(TASK_PARTITION)).to_pylist())
        if plan.loops:
            yield from run_looping_tasks(plan, batch_id, stream_time, split_by_task(rows, table.column(TASK_PARTITION)),
                                         sink_producer, report)
            return
        yield from run_tasks(plan, batch_id, stream_time, split_by_task(rows, table.column(TASK_PARTITION)),
                             sink_producer, report)

    return run


def batch_context(plan: StagePlan) -> tuple[int, int, str]:
    """In a Spark task of a batch's job: ``(batch id, stream time, sink producer)``."""
    spark_task = TaskContext.get()
    batch_id, stream_time = batch_of(spark_task.getLocalProperty(BATCH_PROPERTY))
    # The query id is kept in the checkpoint: it names one run of the application
    # across restarts, and a new one after a reset, when batch ids start from 0
    # again while the output topics remain.
    query_id = spark_task.getLocalProperty(QUERY_ID_PROPERTY)
    return batch_id, stream_time, f"{plan.config.application_id}/{query_id}"


def stage_rows(table: pa.Table) -> pa.Table:
    """A stage's input rows as its tasks take them: Spark's batches differ from
    STAGE_SCHEMA only in nullability and list field names, plus the columns a batch
    lowering added (spark/lowerings.py)."""
    rows = table.select(STAGE_SCHEMA.names).cast(STAGE_SCHEMA)
    for name in table.column_names:
        if name not in STAGE_SCHEMA.names and name != TASK_PARTITION:
            rows = rows.append_column(name, table.column(name))
    return rows


def run_tasks(plan: StagePlan, batch_id: int, stream_time: int, task_rows: Iterator[tuple[int, pa.Table]],
              sink_producer: str, report: Callable[[dict], None]) -> Iterator[pa.RecordBatch]:
    """Run each task over its rows, one after the other; their output rows."""
    # The batch's changelog and sink appends of every task this Spark task runs become
    # durable together (one round of fsyncs per Spark task, not one per append or per
    # task), before the Spark task ends: only then do its reports (accumulator
    # updates) and its output rows count for Spark.
    with plan.backend.open().group_commit():
        for partition, rows in task_rows:
            output, metrics = run_task(plan, batch_id, partition, rows, sink_producer, stream_time)
            report({"tasks": {task_id(plan.sub_id, partition): metrics}})
            yield from output.to_batches()


def reader_stage_function(plan: StagePlan, report: Callable[[dict], None]
                          ) -> Callable[[Iterator[pa.RecordBatch], int], Iterator[pa.RecordBatch]]:
    """:func:`stage_function` for the source's reader to run over the source rows it
    reads (see spark/rules/reader_stage.py: a stateless first stage runs where its topic is read). Its
    second argument, the read task's place in its batch's plan, is the task partition:
    what ``spark_partition_id()`` gives the same stage under ``mapInArrow``."""
    run = stage_function(plan, report)

    def read(batches: Iterator[pa.RecordBatch], index: int, tasks: int = 1) -> Iterator[pa.RecordBatch]:
        return run(batch.append_column(TASK_PARTITION, constant_int32(index, batch.num_rows))
                   for batch in batches)

    return read


def small_batch_reader_function(plan: StagePlan, report: Callable[[dict], None], time_aware: bool
                                ) -> Callable[[Iterator[pa.RecordBatch], int, int], Iterator[pa.RecordBatch]]:
    """The source reader's function for a stateful stage that a small batch runs in its
    read task (spark/rules/small_batch_reader.py). In a job whose
    :data:`READER_RUNS_PROPERTY` names the stage, the read task, the batch's only one
    (its third argument: the batch's read tasks), runs the stage's tasks over the rows it
    has read, each task over the rows of its keys (Spark's hash: where the shuffle by key
    would send them; every task orders its rows itself), and every task of a time-aware
    stage (``time_aware``: the planned stage's, as its ticks would); in any other job it
    hands the rows on as read."""

    def read(batches: Iterator[pa.RecordBatch], index: int, tasks: int) -> Iterator[pa.RecordBatch]:
        if TaskContext.get().getLocalProperty(READER_RUNS_PROPERTY) != str(plan.sub_id):
            yield from batches   # the stage runs after the shuffle, under mapInArrow
            return
        if tasks != 1:   # (a task's rows would be split over several read tasks)
            raise RuntimeError(f"sub-topology {plan.sub_id}'s tasks were to run in its batch's read task, "
                               f"but the source read the batch in {tasks} tasks")
        start_worker_task()
        received = [b for b in batches if b.num_rows]
        if not received:
            return
        batch_id, stream_time, sink_producer = batch_context(plan)
        rows = stage_rows(pa.Table.from_batches(received))
        targets = key_partitions(rows.column("key"), plan.num_partitions)
        partitions = list(range(plan.num_partitions)) if time_aware else np.unique(targets).tolist()
        request_stores_early(plan, partitions)
        yield from run_tasks(plan, batch_id, stream_time,
                             ((p, rows.filter(pa.array(targets == p))) for p in partitions), sink_producer, report)

    return read


def request_stores_early(plan: StagePlan, partitions: list[int]) -> None:
    """Before the first of several tasks runs: ask whichever process keeps the stores of
    the others open to close them now (about half of all batches run in the other
    Python worker, see :mod:`streamlib.state.cache`), so that their hand-over overlaps
    the first task's work instead of following it."""
    if len(partitions) > 1 and plan.topology.subtopologies[plan.sub_id].stateful:
        STORE_CACHE.request_release([plan.config.task_state_dir(task_id(plan.sub_id, partition))
                                     for partition in partitions[1:]])


def batch_of(value: Optional[str]) -> tuple[int, int]:
    """``(batch id, stream time)`` from :data:`BATCH_PROPERTY`'s value.

    >>> batch_of("7:-1")
    (7, -1)
    """
    if not value:
        # The batch id orders the sinks' idempotent appends: never guess it.
        raise RuntimeError(f"a streamlib stage ran in a Spark job without the {BATCH_PROPERTY} property")
    batch_id, stream_time = value.split(":")
    return int(batch_id), int(stream_time)


def split_by_task(rows: pa.Table, partitions: pa.ChunkedArray) -> Iterator[tuple[int, pa.Table]]:
    """``(task partition, its rows)`` for each task in ``partitions`` (one per row of
    ``rows``), in order of first appearance; a task's only row may be its tick (it then
    gets no rows). One Spark task may run several streamlib tasks: the lowering
    coalesces a stage's partitions to the cores there are (see spark/lower.py).

    >>> rows = pa.table({"topic": ["t", TICK_TOPIC, "t"], "offset": [0, 0, 1]})
    >>> [(p, t.column("offset").to_pylist()) for p, t in split_by_task(rows, pa.chunked_array([[3, 1, 3]]))]
    [(3, [0, 1]), (1, [])]
    >>> [(p, t.column("offset").to_pylist()) for p, t in split_by_task(rows, pa.chunked_array([[3, 3, 3]]))]
    [(3, [0, 1])]
    """
    records = pc.not_equal(rows.column("topic"), TICK_TOPIC)
    tasks = pc.unique(partitions).to_pylist()
    if len(tasks) == 1:   # the usual case: the rows between ticks, uncopied
        ticks = np.flatnonzero(~pc.fill_null(records, True).to_numpy(zero_copy_only=False))
        bounds = zip(np.r_[0, ticks + 1], np.r_[ticks, rows.num_rows])
        yield tasks[0], rows if len(ticks) == 0 else pa.concat_tables(
            [rows.slice(lo, hi - lo) for lo, hi in bounds if hi > lo] or [rows.slice(0, 0)])
        return
    for partition in tasks:
        yield partition, rows.filter(pc.and_(pc.equal(partitions, partition), records))


def run_task(plan: StagePlan, batch_id: int, partition: int, rows: pa.Table,
             sink_producer: str, stream_time: int = -1) -> tuple[pa.Table, dict]:
    """Run the stage's task for ``partition`` over ``rows`` (after advancing it to the
    application's ``stream_time``): commit its stores, append its sink rows; return the
    rows it sends to repartitions, and its metrics."""
    run = TaskRun(plan, batch_id, partition, stream_time)
    try:
        run.process(rows)
        return run.finish(sink_producer)
    finally:
        run.close()


class TaskRun:
    """One streamlib task's batch inside a Spark task: begun (its stores opened, its
    global replicas caught up, its transaction begun), fed rows — more than once when
    its stage reads what it writes (:func:`looping_stage_function`) — then finished:
    stores committed, sink rows appended; :meth:`close` always, after."""

    def __init__(self, plan: StagePlan, batch_id: int, partition: int, stream_time: int = -1):
        self.plan, self.batch_id, self.partition = plan, batch_id, partition
        backend = self.backend = plan.backend.open()
        sub = plan.topology.subtopologies[plan.sub_id]
        task = self.task = Task(plan.topology, sub, partition, plan.config, backend.num_partitions)
        #: output taken before the end (:meth:`take_output`), in order
        self._taken: list[pa.Table] = []
        #: rows handed out by :meth:`take_output` so far
        self._sent = 0
        self._punctuated = False
        self.stores = None
        self.committed = False
        # every batch, before processing: this task's replicas of the global tables catch up
        self.replicas = open_global_replicas(plan.config.task_state_dir(task.task_id),
                                             plan.topology.global_stores_of(sub), backend)
        try:
            task.global_stores = {name: replica.kv for name, replica in self.replicas.items()}
            # exactly_once on Kafka: the whole task batch is one transaction (KafkaBackend.begin_task).
            self.transactional = getattr(backend, "exactly_once", False) and hasattr(backend, "begin_task")
            if self.transactional:
                app = plan.config.application_id
                backend.begin_task(f"{app}-{task.task_id}", batch_id, plan.config.batch_marker_topic)
            if task.stateful:
                self.task_dir = plan.config.task_state_dir(task.task_id)
                specs = task.store_specs()
                options = dict(partition=partition, num_partitions=plan.num_partitions,
                               producer_prefix=plan.config.application_id,
                               meta_changelog_topic=plan.config.task_changelog_topic(sub.id))
                # A cached copy serves only this run of the application (a restart, reset or
                # deleted state in between opens afresh), the same stores and changelogs.
                self.cache_key = (plan.run_id, tuple(specs), plan.backend, *options.values())
                self.stores = STORE_CACHE.acquire(self.task_dir, self.cache_key, lambda: open_task_stores(
                    self.task_dir, specs, backend=backend, create_changelogs=False, **options))
            spark_task = TaskContext.get()
            committed = positions_of(spark_task.getLocalProperty(POSITIONS_PROPERTY), task.task_id) \
                if spark_task is not None else None
            task.begin(self.stores, batch_id, stream_time, wall_clock=now_millis(), committed=committed)
        except BaseException:
            self.close()
            raise

    def process(self, rows: pa.Table) -> None:
        # One pause from the rows to the commit: re-enabled in between, the collector
        # ran over everything the batch still held (its stores' read caches and pending
        # writes), ~3% of a windowed task's time.
        with paused_gc():
            self.task.process_table(rows, self.plan.encoding)

    def punctuate(self) -> None:
        """The wall-clock timers, once, after the task's rows."""
        if not self._punctuated:
            self._punctuated = True
            self.task.punctuate_wall_clock(now_millis())

    def take_output(self, topics: frozenset[str]) -> pa.Table:
        """The rows for ``topics`` emitted so far, cached table updates flushed first
        (STAGE_SCHEMA; ``offset`` numbers the task's rows for these topics across calls);
        the other rows are kept for :meth:`finish`."""
        task = self.task
        for proc in task.processors.values():
            proc.flush()
        rows = task.take_output_table()
        wanted = pc.is_in(rows.column("topic"), pa.array(sorted(topics), pa.string()))
        self._taken.append(rows.filter(pc.invert(wanted)))
        taken = output_table(rows.filter(wanted), self.partition, topics)
        sent = self._sent
        self._sent += taken.num_rows
        return taken.set_column(2, "offset", pa.array(np.arange(sent, sent + taken.num_rows, dtype=np.int64)))

    def finish(self, sink_producer: str, combine: bool = True) -> tuple[pa.Table, dict]:
        """Commit the stores, append the sink rows; the rows for repartitions (``combine``:
        those for ``plan.combined_topics`` combined per key) and the metrics."""
        plan, task, backend, stores = self.plan, self.task, self.backend, self.stores
        with paused_gc():
            self.punctuate()
            task.commit()
        taken = self._taken + [task.take_output_table()]
        output = output_table(pa.concat_tables(taken) if len(taken) > 1 else taken[0], self.partition,
                              plan.internal_topics)
        internal = pc.is_in(output.column("topic"), pa.array(sorted(plan.internal_topics), pa.string()))
        # Stores first, then sinks: a re-run after a crash in between undoes the stores'
        # batch and appends the sink rows once; a re-run after both finds the appends
        # already done (same producer, same sequence) and skips them.
        write_sinks(backend, output.filter(pc.invert(internal)), f"{sink_producer}/{task.task_id}",
                    self.batch_id)
        metrics: dict[str, Any] = dict(task.metrics)
        metrics["stream_time"] = task.context.stream_time
        metrics["watermark"] = task.watermark()
        metrics["time_aware"] = task.time_aware
        if stores is not None:
            store_metrics = stores.metrics()
            metrics["stores"] = {name: m.get("entries", 0) for name, m in store_metrics["stores"].items()
                                 if not name.startswith("__")}
            metrics["restored_records"] = store_metrics["restored_records"]
            metrics["restore_seconds"] = store_metrics["restore_seconds"]
            # what one batch adds to the task's changelogs (a standby's catch-up, a move's restore)
            metrics["changelog_records"] = store_metrics["committed_keys"]
        if self.replicas:
            metrics["restored_records"] = metrics.get("restored_records", 0) + sum(
                r.metrics.restored_records for r in self.replicas.values())
        if self.transactional:
            ends = backend.commit_task(self.batch_id)
            self.transactional = False
            if stores is not None:   # the copies reflect the changelogs past their own records
                stores.committed_at(ends)
        if stores is not None:
            metrics["changelog_offsets"] = stores.changelog_offsets()
            metrics["changelog_positions"] = stores.changelog_positions()
        self.committed = True
        repartitioned = output.filter(internal)
        if plan.combined_topics and combine:
            repartitioned = combine_task_rows(repartitioned, plan.combined_topics)
        return repartitioned, metrics

    def close(self) -> None:
        """After :meth:`finish`, or instead of it (a failure: its batch is undone)."""
        if self.transactional:
            self.transactional = False
            self.backend.abort_task()
        if self.stores is not None:
            # Kept open for the task's next batch in this worker (handed over on request);
            # a failed batch's handle is closed, dropping what it did not commit.
            if self.committed:
                STORE_CACHE.release(self.task_dir, self.cache_key, self.stores)
            else:
                STORE_CACHE.discard(self.stores)
            self.stores = None
        for replica in self.replicas.values():
            replica.close()
        self.replicas = {}


def key_partitions(keys: pa.ChunkedArray, n: int) -> np.ndarray:
    """The task of each key as a shuffle by key sends it (Spark's hash; a null key's
    hash is the seed), over the whole column."""
    keys = keys.combine_chunks()
    valid = keys.is_valid()
    targets = np.full(len(keys), SEED % n, dtype=np.int32)
    targets[np.asarray(valid, dtype=bool)] = hash_partitions(keys.filter(valid), n)
    return targets


#: rounds of rows a looping stage's tasks send each other in one batch, at most
MAX_LOOP_ROUNDS = 1000


def run_looping_tasks(plan: StagePlan, batch_id: int, stream_time: int, task_rows: Iterator[tuple[int, pa.Table]],
                      sink_producer: str, report: Callable[[dict], None]) -> Iterator[pa.RecordBatch]:
    """The tasks of a stage that reads repartitions it writes (``plan.loops``), all in
    this Spark task, as the driver runs them: the records of all of them one at a time,
    in the processing order, each followed by what it sends round the loop — the rows
    for those repartitions go to the task of their key (Spark's hash, as a shuffle by
    key would send them), round after round until none is left — and only then does
    every task commit. Updates are not cached between records here: a foreign-key
    subscription must be in place before the next record looks for it.

    The rows for later stages leave as one sequence (partition 0, offsets in order) in
    the order the driver takes them: of each round, a foreign-key join's left values
    first (the driver applies them as they are written,
    ``Topology.fk_left_value_topics``), then the rest as written. A self join's result
    task takes its left values and answers in that order (``Topology.fk_self_join_inputs``)."""
    runs: dict[int, TaskRun] = {}
    at_once = pa.array(sorted(plan.topology.fk_left_value_topics() & plan.internal_topics), pa.string())
    loops = pa.array(sorted(plan.loops), pa.string())
    onward: list[pa.Table] = []

    def run_of(partition: int) -> TaskRun:
        if partition not in runs:
            if runs and next(iter(runs.values())).transactional:
                raise RuntimeError("a sub-topology that reads a repartition it writes itself cannot run "
                                   "with exactly_once on Kafka yet (one transaction per process)")
            runs[partition] = TaskRun(plan, batch_id, partition, stream_time)
        return runs[partition]

    def drain(pending: dict[int, pa.Table]) -> None:
        for _ in range(MAX_LOOP_ROUNDS):
            for partition, rows in pending.items():
                run_of(partition).process(rows)
            taken = [run.take_output(plan.internal_topics) for run in runs.values()]
            taken = pa.concat_tables(taken) if len(taken) > 1 else taken[0]
            looped = pc.is_in(taken.column("topic"), loops)
            first = pc.is_in(taken.column("topic"), at_once)
            onward.extend([taken.filter(first), taken.filter(pc.invert(pc.or_(looped, first)))])
            sent = taken.filter(looped)
            if sent.num_rows == 0:
                return
            targets = pa.array(key_partitions(sent.column("key"), plan.num_partitions), pa.int32())
            pending = {p: sent.filter(pc.equal(targets, p)) for p in pc.unique(targets).to_pylist()}
        raise RuntimeError(f"sub-topology {plan.sub_id}'s tasks still send rows to each other after "
                           f"{MAX_LOOP_ROUNDS} rounds")

    try:
        parts = list(task_rows)
        for partition, _ in parts:   # every task with rows (or a tick) begins
            run_of(partition)
        records = pa.concat_tables([rows for _, rows in parts])
        owners = np.concatenate([np.full(rows.num_rows, partition, dtype=np.int64) for partition, rows in parts])
        for i in processing_order(records):
            drain({int(owners[i]): records.slice(int(i), 1)})
        for run in runs.values():
            run.punctuate()
        drain({})
        with plan.backend.open().group_commit():   # (as in stage_function: one round of fsyncs)
            for partition, run in runs.items():
                output, metrics = run.finish(sink_producer, combine=False)
                report({"tasks": {task_id(plan.sub_id, partition): metrics}})
                onward.append(output)
        yield from one_sequence(pa.concat_tables(onward), plan.combined_topics).to_batches()
    finally:
        for run in runs.values():
            run.close()


def one_sequence(rows: pa.Table, combined_topics: frozenset[str]) -> pa.Table:
    """A looping stage's rows for later stages, in order, as one task's (partition 0)."""
    rows = rows.set_column(1, STAGE_SCHEMA.field("partition"), constant_int32(0, rows.num_rows))
    rows = rows.set_column(2, STAGE_SCHEMA.field("offset"), pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    return combine_task_rows(rows, combined_topics) if combined_topics else rows


def write_sinks(backend: Any, rows: pa.Table, producer_id: str, batch_id: int) -> None:
    """Append a task's sink rows: one idempotent append per topic partition."""
    if rows.num_rows == 0:
        return
    for topic, partition, records in split_by_partition(rows, None, backend.num_partitions):
        backend.append(topic, partition, records, producer_id=producer_id, sequence=batch_id)


def output_table(output: pa.Table, partition: int, internal_topics: frozenset[str]) -> pa.Table:
    """Task output rows (``processors.columnar.OUTPUT_SCHEMA``) -> STAGE_SCHEMA; repartition
    rows carry (task partition, sequence)."""
    topics = output.column("topic")
    internal = pc.is_in(topics, pa.array(sorted(internal_topics), pa.string()))
    partitions = pc.if_else(internal, pa.scalar(partition, pa.int32()), output.column("partition"))
    return pa.Table.from_arrays(
        [topics, partitions, pa.array(np.arange(output.num_rows, dtype=np.int64)),
         output.column("timestamp"), output.column("key"), output.column("value"), output.column("headers")],
        schema=STAGE_SCHEMA)


def merge_metrics(total: dict, update: dict) -> dict:
    """Accumulator merge: per-task metrics, the newest report of a task wins."""
    tasks = dict(total.get("tasks", {}))
    tasks.update(update.get("tasks", {}))
    return {"tasks": tasks}

