"""``Task``: one sub-topology running for one partition, batch by batch."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

import pyarrow as pa
import pyarrow.compute as pc

from ..config import StreamsConfig
from ..processors import Processor, ProcessorContext, SourceProcessor, build_processors
from ..processors.columnar import output_rows, output_tuples
from ..processors.stores import TypedStore, entries_per_record, typed_store
from ..processors.timers import STREAM_TIME, WALL_CLOCK_TIME, Timers
from ..state import StoreSpec
from ..topology import SubTopology, Topology
from .fused import FusedChain
from .joined import JoinedBatch
from .versioned_joined import VersionedJoinBatch
from .encoding import InputEncoding
from .order import processing_order

_STREAM_TIME = "stream_time"


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside: a batch allocates many short-lived, acyclic
    objects (freed by reference counting), and the collector's passes over them cost
    about a quarter of the batch's Python time. It runs again when the batch is done."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def task_id(sub_id: int, partition: int) -> str:
    """The id of the task that runs sub-topology ``sub_id`` for ``partition`` (Kafka
    Streams' ``<subtopology>_<partition>``); it names the task's state directory.

    >>> task_id(1, 3)
    '1_3'
    """
    return f"{sub_id}_{partition}"


class Task:
    """Runs one sub-topology for one partition.

    A batch is ``begin(stores, batch_id)``, any number of ``process_*`` calls, then
    ``commit()``; the records it emitted are taken with :meth:`take_output`.

    The task's stream time (the largest timestamp it processed) and its processors'
    own times are task state: committed, rolled back and restored with the stores.
    """

    def __init__(self, topology: Topology, sub: SubTopology, partition: int, config: StreamsConfig,
                 topic_partitions: Callable[[str], int] = lambda topic: 1):
        topology = topology.resolve(config)  # ``self`` when the application resolved it already
        self.topology = topology
        self.sub = sub
        self.partition = partition
        self.config = config
        self.task_id = task_id(sub.id, partition)
        self.context = ProcessorContext(self.task_id, partition, config, topic_partitions)
        self.processors: dict[str, Processor] = build_processors(topology, sub, self.context)
        self.sources: dict[str, SourceProcessor] = {
            topic: proc for proc in self.processors.values() if isinstance(proc, SourceProcessor)
            for topic in proc.node.params.topics}
        #: input topics taken as one sequence (a foreign-key self join's left values and
        #: answers, in the order its sub-topology sent them: ``Topology.fk_self_join_inputs``)
        self.in_order_topics: frozenset[str] = frozenset().union(
            *(topology.fk_self_join_inputs(name) or () for name in sub.nodes))
        self._stores: Any = None
        self._views: list[TypedStore] = []
        #: replicas of the global tables this task joins (store name -> byte store),
        #: set by the runtime, which keeps them current
        self.global_stores: dict[str, Any] = {}
        #: (topic, source, child) when the child takes the source's rows as one table
        self._batch_child: Optional[tuple] = None
        #: the same, for a child that folds them per window where the plan asks (``InputEncoding.WINDOW_FOLDS``)
        self._fold_child: Optional[tuple] = None
        #: the whole sub-topology when it is one stateless chain run over columns
        self._fused: Optional[FusedChain] = None
        #: the whole sub-topology when it is one stream–table join: run over columns (the
        #: classic join), or with a lean loop (with a grace period)
        self._joined: Optional[Any] = None

    # -- stores --------------------------------------------------------------------------
    def store_specs(self) -> list[StoreSpec]:
        """The stores this task needs, with their changelog topics."""
        defs = [self.topology.stores[name] for name in self.sub.stores]
        return [StoreSpec(name=d.name, changelog_topic=self.config.changelog_topic(d.name),
                          logging=d.logging, entries_per_record=entries_per_record(d.kind),
                          changelog_config=d.changelog_topic_config())
                for d in defs]

    @property
    def stateful(self) -> bool:
        return self.sub.stateful

    # -- one batch -----------------------------------------------------------------------
    def begin(self, stores: Any, batch_id: int, stream_time: int = -1,
              wall_clock: Optional[int] = None, committed: Optional[dict] = None) -> None:
        """Start a batch on ``stores`` (from :func:`streamlib.state.open_task_stores`,
        or ``None`` for a stateless task); ``stream_time``: the application's stream
        time, which the task advances to before it processes anything (under Spark);
        ``wall_clock``: the time now (processors schedule wall-clock timers from it);
        ``committed``: the changelog positions its stores reached in an earlier batch
        (see :meth:`streamlib.state.TaskStores.begin`)."""
        self._stores = stores
        self._views = []
        context = self.context
        if wall_clock is not None:
            context.wall_clock_time = wall_clock
        context.output = []  # rows of a batch that failed before take_output() are void
        context.emitted = []
        context.stores = {}
        context.task_state = {}
        context.task_state_changed = set()
        context.timers = Timers()  # processors schedule theirs in init()
        if stores is not None:
            stores.begin(batch_id, committed)
            for name in self.sub.stores:
                view = typed_store(self.topology.stores[name], stores[name], self.config)
                self.context.stores[name] = view
                self._views.append(view)
            context.task_state = stores.meta_items()
        for name, replica in self.global_stores.items():   # read only: never written back
            context.stores[name] = typed_store(self.topology.stores[name], replica, self.config)
        previous = context.stream_time
        context.stream_time = context.get_long(_STREAM_TIME)
        if stores is None:   # no store keeps a stateless task's stream time: the task does
            context.stream_time = max(context.stream_time, previous)
        for proc in self.processors.values():
            proc.init()
        if stream_time > context.stream_time:
            self.advance_time(stream_time)
        self._batch_child = self._fold_child = None
        reader = self.topology.batch_reader(self.sub)
        if reader is not None:
            source, child = (self.processors[node.name] for node in reader)
            if child.takes_batches(source.key_serde):
                self._batch_child = (source.node.params.topics[0], source, child)
            elif child.folds_batches(source.key_serde):
                self._fold_child = (source.node.params.topics[0], source, child)
        # Fused only while no stream-time timer could be due between two records.
        no_timers = context.timers.next_stream_due == float("inf")
        self._fused = FusedChain.of(self.processors, context) if no_timers else None
        self._joined = None
        if no_timers:
            self._joined = (JoinedBatch.of(self.processors, context)
                            or VersionedJoinBatch.of(self.processors, context))

    def advance_time(self, stream_time: int) -> None:
        """Move the task's stream time forward (never back) and let every processor
        close what is now closed."""
        context = self.context
        if stream_time > context.stream_time:
            context.stream_time = stream_time
            context.timers.fire(STREAM_TIME, stream_time)
        for proc in self.processors.values():
            proc.advance_time(stream_time)

    def process(self, topic: str, partition: int, offset: int, timestamp: int,
                key: Optional[bytes], value: Optional[bytes], headers: tuple = ()) -> None:
        """Process one input record (bytes as read from ``topic``)."""
        self.sources[topic].receive(topic, partition, offset, timestamp, key, value, headers)
        self._fire_due_timers()

    def _fire_due_timers(self) -> None:
        context = self.context
        if context.stream_time >= context.timers.next_stream_due:
            context.timers.fire(STREAM_TIME, context.stream_time)

    def punctuate_wall_clock(self, now: int) -> None:
        """Fire the wall-clock timers due at ``now`` (a batch boundary)."""
        self.context.wall_clock_time = now
        self.context.timers.fire(WALL_CLOCK_TIME, now)

    def process_table(self, table: pa.Table, encoding: InputEncoding = InputEncoding.RECORDS) -> None:
        """Process input rows (topic, partition, offset, timestamp, key, value, headers)
        in the deterministic processing order; ``encoding``: what the rows stand for, as
        the stage's plan declares it."""
        if table.num_rows == 0:
            return
        with paused_gc():
            if encoding is InputEncoding.WINDOW_COUNTS:
                self._process_window_counts(table)
            elif encoding is InputEncoding.COUNTED:
                self._process_counted(table.take(processing_order(table, self.in_order_topics)))
            elif encoding is InputEncoding.WINDOW_FOLDS:
                self._process_folds(table.take(processing_order(table, self.in_order_topics)))
            else:
                self._process_table(table.take(processing_order(table, self.in_order_topics)))

    def _batch_child_for(self, encoding: InputEncoding, method: str) -> tuple:
        """The batch child that takes rows of ``encoding`` (its ``method``)."""
        if self._batch_child is None or not hasattr(self._batch_child[2], method):
            raise RuntimeError(f"task {self.task_id} got rows encoded as {encoding.value} but has no "
                               f"step that takes them ({method})")
        return self._batch_child

    def _process_window_counts(self, table: pa.Table) -> None:
        """Rows a source reader pre-aggregated for the windowed count this task's source
        feeds (:mod:`streamlib.spark.window_counts`), and the raw rows it left as they
        were (every pre-aggregation column null): records for the deserialization
        handler, or with an invalid timestamp, that never reach the count."""
        raw = pc.is_null(table.column("inputs"))
        if pc.any(raw).as_py():
            rows = table.filter(raw)
            self._process_records(rows.take(processing_order(rows, self.in_order_topics)))
        rows = table.filter(pc.invert(raw))
        if rows.num_rows == 0:
            return
        topic, source, child = self._batch_child_for(InputEncoding.WINDOW_COUNTS, "process_window_counts")
        source.receive_table(rows, topic, represents="inputs")
        child.process_window_counts(rows, topic)

    def _process_counted(self, table: pa.Table) -> None:
        """Rows of a count's input, one per key, that Spark pre-aggregated
        (:mod:`streamlib.spark.preaggregate`)."""
        topic, source, child = self._batch_child_for(InputEncoding.COUNTED, "process_counted")
        source.receive_table(table, topic, represents="records")
        child.process_counted(table, topic)

    def _process_folds(self, table: pa.Table) -> None:
        """Records for a windowed reduce or aggregate that folds them at once where its
        source takes the rows whole and its functions raise nothing; else as records."""
        if self._fold_child is not None and self._takes_table(table, self._fold_child[1]):
            topic, source, child = self._fold_child
            if child.process_folds(table, topic, source.key_serde, source.value_serde):
                source.receive_table(table, topic)
                return
        self._process_table(table)

    def _process_table(self, table: pa.Table) -> None:
        if self._batch_child is not None and self._takes_table(table, self._batch_child[1]):
            topic, source, child = self._batch_child
            source.receive_table(table, topic)
            child.process_batch(table, topic)
            return
        if self._joined is not None and self._joined.run(table):
            return
        if self._fused is not None:
            rows = self._fused.run(table)
            if rows is not None:
                self.context.emit_rows(rows)
                return
        self._process_records(table)

    def _process_records(self, table: pa.Table) -> None:
        """Each row through its topic's source, one by one, in the table's order."""
        # to_numpy().tolist(): several times faster than to_pylist() for bytes and strings
        columns = [table.column(c).to_numpy(zero_copy_only=False).tolist() for c in
                   ("topic", "partition", "offset", "timestamp", "key", "value")]
        headers = None
        if "headers" in table.column_names and pc.sum(pc.list_value_length(table.column("headers"))).as_py():
            headers = table.column("headers").to_pylist()
        sources = self.sources
        context = self.context
        timers = context.timers
        for i, (topic, partition, offset, timestamp, key, value) in enumerate(zip(*columns)):
            hdrs = headers[i] if headers is not None else None
            sources[topic].receive(topic, partition, offset, timestamp, key, value,
                                   tuple((h["key"], h["value"]) for h in hdrs) if hdrs else ())
            if context.stream_time >= timers.next_stream_due:
                timers.fire(STREAM_TIME, context.stream_time)

    def _takes_table(self, table: pa.Table, source: SourceProcessor) -> bool:
        """Whether a batch child may take ``table`` whole: its ``source`` accepts the rows,
        and no stream-time timer falls due within them (they fire between records)."""
        newest = pc.max(table.column("timestamp")).as_py()
        newest = self.context.stream_time if newest is None else max(newest, self.context.stream_time)
        return newest < self.context.timers.next_stream_due and source.takes_table(table)

    def commit(self) -> None:
        """End the batch: flush cached table updates, then commit the stores."""
        with paused_gc():
            self._commit()

    def _commit(self) -> None:
        for proc in self.processors.values():
            proc.flush()
        if self._stores is not None:
            for view in self._views:
                view.write_back()
            context = self.context
            context.put_long(_STREAM_TIME, context.stream_time)
            for name in sorted(context.task_state_changed):
                self._stores.meta_put(name, context.task_state[name])
            context.task_state_changed = set()
            self._stores.commit()

    def _take_segments(self) -> list:
        context = self.context
        segments, context.emitted = context.emitted + [context.output], []
        context.output = []
        return segments

    def take_output(self) -> list[tuple]:
        """Rows emitted since the last call: (topic, partition, timestamp, key, value, headers)."""
        output = [row for segment in self._take_segments()
                  for row in (segment if isinstance(segment, list) else output_tuples(segment))]
        self.context.count("records_out", len(output))
        return output

    def take_output_table(self) -> pa.Table:
        """:meth:`take_output` as one Arrow table (``processors.columnar.OUTPUT_SCHEMA``)."""
        tables = [output_rows(s) if isinstance(s, list) else s for s in self._take_segments() if len(s)]
        rows = pa.concat_tables(tables) if len(tables) > 1 else tables[0] if tables else output_rows([])
        self.context.count("records_out", rows.num_rows)
        return rows

    def watermark(self) -> int:
        """The smallest watermark (observed stream time − grace) over the task's
        time-aware operators; its stream time if it has none."""
        marks = [proc.watermark() for proc in self.processors.values() if proc.time_aware]
        return min(marks, default=self.context.stream_time)

    @property
    def time_aware(self) -> bool:
        """Whether a processor of this task acts on stream time (windows, suppress)."""
        return any(proc.time_aware for proc in self.processors.values())

    @property
    def metrics(self) -> dict[str, int]:
        return self.context.metrics
