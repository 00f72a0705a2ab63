"""``TopologyTestDriver``: run a topology in-process, record by record, without Spark.

The driver runs the same processors and stores as a Spark run (RocksDB in a
temporary directory) and emits every update, like Kafka Streams' driver.
"""
from __future__ import annotations

import shutil
import tempfile
from collections import defaultdict, deque
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Optional

from .config import StreamsConfig
from .processors.drops import add_drops
from .processors.stores import KeyValueStoreView, SessionStoreView, WindowStoreView, query_view
from .processors.stores.kinds import queryable_kind
from .runtime.task import Task
from .serdes import Serde
from .state import open_task_stores
from .state.global_replica import open_global_replicas
from .state.kinds import StoreKind
from .time import Duration, to_millis
from .topology import Topology, TopologyError


class PendingRecords:
    """Records queued per topic, taken as a Kafka Streams task takes them (its
    ``PartitionGroup``): next from the topic whose first record has the smallest
    timestamp. Ties fall as in Kafka, whose topics wait in a ``java.util.PriorityQueue``:
    its binary heap is reproduced here (``heapq`` breaks ties differently)."""

    def __init__(self) -> None:
        self._queues: dict[str, deque] = defaultdict(deque)
        self._heap: list[str] = []   # topics with records, as Java's heap array

    def add(self, topic: str, record: tuple) -> None:
        """Queue ``record`` (its first field the timestamp) on ``topic``."""
        queue = self._queues[topic]
        queue.append(record)
        if len(queue) == 1:
            self._offer(topic)

    def pop(self) -> Optional[tuple[str, tuple]]:
        """``(topic, record)`` of the next record, or None when none waits."""
        if not self._heap:
            return None
        topic = self._poll()
        queue = self._queues[topic]
        record = queue.popleft()
        if queue:
            self._offer(topic)
        return topic, record

    def _head(self, topic: str) -> int:
        return self._queues[topic][0][0]

    def _offer(self, topic: str) -> None:   # PriorityQueue.offer: sift up
        heap, key = self._heap, self._head(topic)
        heap.append(topic)
        k = len(heap) - 1
        while k > 0:
            parent = (k - 1) >> 1
            if key >= self._head(heap[parent]):
                break
            heap[k] = heap[parent]
            k = parent
        heap[k] = topic

    def _poll(self) -> str:   # PriorityQueue.poll: the last moves to the root, sifts down
        heap = self._heap
        top, last = heap[0], heap.pop()
        n = len(heap)
        if n:
            key, k = self._head(last), 0
            while k < n >> 1:
                child = 2 * k + 1
                if child + 1 < n and self._head(heap[child]) > self._head(heap[child + 1]):
                    child += 1
                if key <= self._head(heap[child]):
                    break
                heap[k] = heap[child]
                k = child
            heap[k] = last
        return top


@dataclass
class TestRecord:
    """An output record: key, value, timestamp and headers."""

    key: Any
    value: Any
    timestamp: Optional[int] = None
    headers: dict[str, bytes] = field(default_factory=dict)

    __test__ = False  # not a pytest test class


class TestInputTopic:
    """Pipes records into one input topic of the driver."""

    __test__ = False

    def __init__(self, driver: "TopologyTestDriver", name: str, key_serde: Serde, value_serde: Serde):
        self._driver = driver
        self.name = name
        self._key_serde = key_serde
        self._value_serde = value_serde

    def pipe_input(self, key: Any = None, value: Any = None, timestamp: Optional[int] = None,
                   headers: Optional[dict[str, bytes]] = None) -> None:
        """Send one record through every sub-topology before returning."""
        self._driver._pipe(self.name, self._key_serde.serialize(key), self._value_serde.serialize(value),
                           timestamp, tuple((headers or {}).items()))

    def pipe_key_value_list(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        for key, value in pairs:
            self.pipe_input(key, value)

    def pipe_value_list(self, values: Iterable[Any]) -> None:
        for value in values:
            self.pipe_input(None, value)

    def pipe_record_list(self, records: Iterable[TestRecord]) -> None:
        for r in records:
            self.pipe_input(r.key, r.value, r.timestamp, r.headers)


class TestOutputTopic:
    """Reads what the topology wrote to one topic, oldest first."""

    __test__ = False

    def __init__(self, queue: deque, key_serde: Serde, value_serde: Serde):
        self._queue = queue
        self._key_serde = key_serde
        self._value_serde = value_serde

    def _next(self) -> TestRecord:
        if not self._queue:
            raise IndexError("no more records in the output topic")
        _, timestamp, key, value, headers = self._queue.popleft()
        return TestRecord(self._key_serde.deserialize(key), self._value_serde.deserialize(value),
                          timestamp, dict(headers))

    def read_record(self) -> TestRecord:
        return self._next()

    def read_key_value(self) -> tuple[Any, Any]:
        record = self._next()
        return record.key, record.value

    def read_value(self) -> Any:
        return self._next().value

    def read_records_to_list(self) -> list[TestRecord]:
        return [self._next() for _ in range(len(self._queue))]

    def read_key_values_to_list(self) -> list[tuple[Any, Any]]:
        return [(r.key, r.value) for r in self.read_records_to_list()]

    def read_values_to_list(self) -> list[Any]:
        return [r.value for r in self.read_records_to_list()]

    def read_key_values_to_map(self) -> dict[Any, Any]:
        return {r.key: r.value for r in self.read_records_to_list()}

    def get_queue_size(self) -> int:
        return len(self._queue)

    def is_empty(self) -> bool:
        return not self._queue


class TopologyTestDriver:
    """Runs ``topology`` in-process; see the module docstring.

    Examples
    --------
    >>> from streamlib import StreamsBuilder, Serdes, TopologyTestDriver
    >>> builder = StreamsBuilder()
    >>> builder.stream("in").map_values(str.upper).to("out")
    >>> driver = TopologyTestDriver(builder.build())
    >>> driver.create_input_topic("in", Serdes.string(), Serdes.string()).pipe_input("k", "hello")
    >>> driver.create_output_topic("out", Serdes.string(), Serdes.string()).read_key_value()
    ('k', 'HELLO')
    >>> driver.close()
    """

    def __init__(self, topology: Topology, config: Optional[StreamsConfig] = None,
                 initial_wall_clock_time: int = 0):
        self._state_dir = tempfile.mkdtemp(prefix="streamlib-driver-")
        base = config or StreamsConfig(application_id="topology-test-driver")
        # The driver emits every update, like Kafka Streams' driver: no caching.
        self.config = replace(base, cache_max_bytes=0, state_dir=self._state_dir)
        #: the topology with the config's default serdes filled in (``Topology.resolve``)
        self.topology = topology = topology.resolve(self.config)
        self._wall_clock = initial_wall_clock_time
        self._outputs: dict[str, deque] = defaultdict(deque)
        self._offsets: dict[str, int] = defaultdict(int)
        self._batch = 0
        self._tasks = [Task(topology, sub, 0, self.config) for sub in topology.subtopologies]
        self._stores = {}
        for task in self._tasks:
            if task.stateful:
                self._stores[task.task_id] = open_task_stores(
                    self.config.task_state_dir(task.task_id), task.store_specs(), backend=None,
                    partition=0, num_partitions=1, producer_prefix=self.config.application_id)
        # One replica per global table, shared by the tasks: piping into a global topic
        # updates it at once (Kafka's driver updates global stores synchronously too).
        self._globals = open_global_replicas(self.config.task_state_dir("global"),
                                             topology.global_stores())
        self._global_topics = {topic: name for name, topic in topology.global_stores().items()}
        for task in self._tasks:
            task.global_stores = {name: self._globals[name].kv
                                  for name in topology.global_stores_of(task.sub)}
        self._internal = {t for sub in topology.subtopologies for t in sub.repartition_inputs}
        #: topics some task reads, and those plus the global tables' topics
        self._task_topics = {t for task in self._tasks for t in task.sources}
        self._read_topics = self._task_topics | set(self._global_topics)
        self._pending = PendingRecords()
        #: a foreign-key join's left values, applied to its replica as they are written
        self._at_once = topology.fk_left_value_topics()
        #: tasks that ran once: a processor has its state (and a watermark) from then on
        self._begun: set[str] = set()

    # -- topics --------------------------------------------------------------------------
    def create_input_topic(self, name: str, key_serde: Serde, value_serde: Serde) -> TestInputTopic:
        if not self.topology.subtopology_for_input(name) and name not in self._global_topics:
            raise TopologyError(f"the topology does not read topic {name!r}; it reads "
                                f"{self.topology.source_topics()}")
        return TestInputTopic(self, name, key_serde, value_serde)

    def create_output_topic(self, name: str, key_serde: Serde, value_serde: Serde) -> TestOutputTopic:
        return TestOutputTopic(self._outputs[name], key_serde, value_serde)

    def _pipe(self, topic: str, key: Optional[bytes], value: Optional[bytes],
              timestamp: Optional[int], headers: tuple) -> None:
        self._write(topic, self._wall_clock if timestamp is None else timestamp, key, value, headers)
        self._process_pending()

    def _write(self, topic: str, ts: int, key: Optional[bytes], value: Optional[bytes],
               headers: tuple) -> None:
        """A record written to ``topic`` (piped, or output of a task): a global table's
        update at once, queued for the tasks that read the topic."""
        offset = self._offsets[topic]
        self._offsets[topic] += 1
        if topic in self._global_topics:
            self._globals[self._global_topics[topic]].apply([(key, value, ts)])
        if topic in self._at_once:
            self._deliver(topic, (ts, offset, key, value, headers))
        elif topic in self._task_topics:
            self._pending.add(topic, (ts, offset, key, value, headers))

    def _process_pending(self) -> None:
        """Process queued records one at a time, as Kafka Streams' driver does: all the
        records one produced (to repartition or source topics) are queued before the
        next is taken, from the topic whose first record is oldest."""
        while (pending := self._pending.pop()) is not None:
            self._deliver(*pending)

    def _deliver(self, topic: str, record: tuple) -> None:
        ts, offset, key, value, headers = record
        for task in self._tasks:
            if topic in task.sources:
                self._run(task, lambda: task.process(topic, 0, offset, ts, key, value, headers))

    def _run(self, task: Task, work, wall_clock: Optional[int] = None) -> None:
        """One commit of ``task`` around ``work``; its output recorded and written on.
        Processors start it at ``wall_clock`` (default: the driver's clock)."""
        self._batch += 1
        self._begun.add(task.task_id)
        task.begin(self._stores.get(task.task_id), self._batch,
                   wall_clock=self._wall_clock if wall_clock is None else wall_clock)
        work()
        task.commit()
        for out_topic, _, out_ts, out_key, out_value, out_headers in task.take_output():
            # a repartition topic is readable under its full name, as in Kafka's driver
            name = f"{self.config.application_id}-{out_topic}" if out_topic in self._internal else out_topic
            self._outputs[name].append((0, out_ts, out_key, out_value, out_headers))
            if out_topic in self._read_topics:
                self._write(out_topic, out_ts, out_key, out_value, out_headers)

    # -- state and time ------------------------------------------------------------------
    def _view(self, name: str, kind: Optional[StoreKind] = None) -> Any:
        """The query view of store ``name``; with ``kind``, a clear error for another kind."""
        d = self.topology.stores.get(name)
        if d is None:
            raise KeyError(f"no store named {name!r}; stores: {sorted(self.topology.stores)}")
        if kind is not None and d.kind is not kind:
            raise TypeError(f"store {name!r} is a {d.kind.label} store, not a {kind.label} store")
        if d.global_topic:
            return query_view(d, self._globals[name].kv, self.config)
        task = next(t for t in self._tasks if name in t.sub.stores)
        return query_view(d, self._stores[task.task_id][name], self.config)

    def get_key_value_store(self, name: str) -> KeyValueStoreView:
        """A read-only view of a key-value store (values without timestamps)."""
        return self._view(name, StoreKind.KV)

    def get_window_store(self, name: str) -> WindowStoreView:
        """A read-only view of a window store: ``fetch(key, time_from, time_to)``, ..."""
        return self._view(name, StoreKind.WINDOW)

    def get_session_store(self, name: str) -> SessionStoreView:
        """A read-only view of a session store: ``fetch_sessions(key)``, ..."""
        return self._view(name, StoreKind.SESSION)

    def get_all_state_stores(self) -> dict[str, Any]:
        """Every store's read-only view, by name (each of its kind)."""
        return {name: self._view(name) for name, d in self.topology.stores.items()
                if queryable_kind(d.kind)}

    def advance_wall_clock_time(self, duration: Duration) -> None:
        """Move the wall clock forward and fire the wall-clock timers now due (tasks
        start at the clock before the move: a processor's first schedule counts from it)."""
        before = self._wall_clock
        self._wall_clock += to_millis(duration)
        for task in self._tasks:
            self._run(task, lambda: task.punctuate_wall_clock(self._wall_clock), wall_clock=before)
        self._process_pending()

    def metrics(self) -> dict[str, Any]:
        """The same keys as ``app.metrics()``: counters summed over the tasks, ``drops``
        (reason -> node -> records dropped), stream time and watermark."""
        totals: dict[str, Any] = defaultdict(int)
        drops: dict[str, dict[str, int]] = {}
        for task in self._tasks:
            for metric, value in task.metrics.items():
                if metric == "drops":
                    add_drops(drops, value)
                else:
                    totals[metric] += value
        totals["drops"] = drops
        totals["stream_time"] = max((t.context.stream_time for t in self._tasks), default=-1)
        marks = [t.watermark() for t in self._tasks if t.time_aware and t.task_id in self._begun]
        totals["watermark"] = min(marks, default=totals["stream_time"])
        return dict(totals)

    def close(self) -> None:
        for stores in self._stores.values():
            stores.close()
        self._stores.clear()
        for replica in self._globals.values():
            replica.close()
        self._globals.clear()
        shutil.rmtree(self._state_dir, ignore_errors=True)

    def __enter__(self) -> "TopologyTestDriver":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
