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
from .processors.stores import KeyValueStoreView, SessionStoreView, WindowStoreView, query_view
from .processors.stores.kinds import queryable_kind
from .runtime.task import Task
from .serdes import Serde
from .state import open_task_stores
from .state.global_replica import open_global_replicas
from .time import Duration, to_millis
from .topology import Topology, TopologyError


_KIND_NAMES = {"kv": "key-value", "window": "window", "session": "session"}


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
        self.topology = topology
        self._state_dir = tempfile.mkdtemp(prefix="streamlib-driver-")
        base = config or StreamsConfig(application_id="topology-test-driver")
        # The driver emits every update, like Kafka Streams' driver: no caching.
        self.config = replace(base, cache_max_bytes=0, state_dir=self._state_dir)
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
        self._read_topics = {t for sub in topology.subtopologies for t in sub.input_topics}
        self._read_topics |= set(self._global_topics)

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
        self._process(topic, self._wall_clock if timestamp is None else timestamp, key, value, headers)

    def _process(self, topic: str, ts: int, key: Optional[bytes], value: Optional[bytes],
                 headers: tuple) -> None:
        """Process one record, then each record it produced in turn, depth first, as
        Kafka Streams' driver does: a record written to a topic the topology reads
        (a repartition topic, or any source topic) is processed before the next output
        of the record that produced it."""
        offset = self._offsets[topic]
        self._offsets[topic] += 1
        if topic in self._global_topics:
            self._globals[self._global_topics[topic]].apply([(key, value, ts)])
        for task in self._tasks:
            if topic not in task.sources:
                continue
            self._run(task, lambda: task.process(topic, 0, offset, ts, key, value, headers))

    def _run(self, task: Task, work) -> None:
        """One commit of ``task`` around ``work``, then its output, depth first."""
        self._batch += 1
        task.begin(self._stores.get(task.task_id), self._batch)
        work()
        task.commit()
        for out_topic, _, out_ts, out_key, out_value, out_headers in task.take_output():
            if out_topic not in self._internal:
                self._outputs[out_topic].append((0, out_ts, out_key, out_value, out_headers))
            if out_topic in self._read_topics:
                self._process(out_topic, out_ts, out_key, out_value, out_headers)

    # -- state and time ------------------------------------------------------------------
    def _view(self, name: str, kind: Optional[str] = None) -> Any:
        """The query view of store ``name``; with ``kind``, a clear error for another kind."""
        d = self.topology.stores.get(name)
        if d is None:
            raise KeyError(f"no store named {name!r}; stores: {sorted(self.topology.stores)}")
        if kind is not None and d.kind != kind:
            raise TypeError(f"store {name!r} is a {_KIND_NAMES.get(d.kind, d.kind)} store, "
                            f"not a {_KIND_NAMES[kind]} store")
        if d.global_topic:
            return query_view(d, self._globals[name].kv, self.config)
        task = next(t for t in self._tasks if name in t.sub.stores)
        return query_view(d, self._stores[task.task_id][name], self.config)

    def get_key_value_store(self, name: str) -> KeyValueStoreView:
        """A read-only view of a key-value store (values without timestamps)."""
        return self._view(name, "kv")

    def get_window_store(self, name: str) -> WindowStoreView:
        """A read-only view of a window store: ``fetch(key, time_from, time_to)``, ..."""
        return self._view(name, "window")

    def get_session_store(self, name: str) -> SessionStoreView:
        """A read-only view of a session store: ``fetch_sessions(key)``, ..."""
        return self._view(name, "session")

    def get_all_state_stores(self) -> dict[str, Any]:
        """Every store's read-only view, by name (each of its kind)."""
        return {name: self._view(name) for name, d in self.topology.stores.items()
                if queryable_kind(d.kind)}

    def advance_wall_clock_time(self, duration: Duration) -> None:
        """Move the wall clock forward and fire the wall-clock timers now due."""
        self._wall_clock += to_millis(duration)
        for task in self._tasks:
            self._run(task, lambda: task.punctuate_wall_clock(self._wall_clock))

    def metrics(self) -> dict[str, Any]:
        totals: dict[str, Any] = defaultdict(int)
        for task in self._tasks:
            for metric, value in task.metrics.items():
                totals[metric] += value
        totals["stream_time"] = max((t.context.stream_time for t in self._tasks), default=-1)
        marks = [t.watermark() for t in self._tasks if t.time_aware]
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
