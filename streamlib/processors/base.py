"""The processor contract: a node of a running sub-topology, and the context it runs in."""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Callable, Optional

from ..config import StreamsConfig
from ..errors import StreamlibError, user_frame
from ..topology import Node
from .drops import count_drop
from .record import Record
from .timers import STREAM_TIME, Timer, Timers

if TYPE_CHECKING:
    import pyarrow as pa

    from ..serdes import Serde

_LONG = struct.Struct(">q")
class ProcessingError(StreamlibError, RuntimeError):
    """A user function or a serde failed on a record; names the record and the node."""

    def __init__(self, message: str, record: Optional[Record] = None, node: Optional[str] = None):
        where = f" at {record.where()}" if record is not None and record.offset >= 0 else ""
        at_node = f" in {node}" if node else ""
        super().__init__(f"{message}{at_node}{where}")
        self.record = record
        self.node = node


class ProcessorContext:
    """What a processor sees of its task: stores, stream time, output, metrics."""

    def __init__(self, task_id: str, partition: int, config: StreamsConfig,
                 topic_partitions: Callable[[str], int]):
        self.task_id = task_id
        self.partition = partition
        self.config = config
        self.caching = config.caching
        #: number of partitions of an output topic (for custom partitioners)
        self.topic_partitions = topic_partitions
        self.stores: dict[str, Any] = {}
        self.stream_time = -1
        self.wall_clock_time = 0
        self.timers = Timers()
        #: task-level values committed with the stores (name -> bytes); loaded at begin
        self.task_state: dict[str, bytes] = {}
        self.task_state_changed: set[str] = set()
        #: rows leaving the task: (topic, partition or None, timestamp, key, value, headers)
        self.output: list[tuple] = []
        #: earlier output, in order: lists of such tuples and Arrow tables of them
        #: (``processors.columnar.OUTPUT_SCHEMA``) emitted by :meth:`emit_rows`
        self.emitted: list[Any] = []
        #: counters, and ``drops``: reason -> node -> records dropped (see :meth:`drop`)
        self.metrics: dict[str, Any] = {"records_in": 0, "records_out": 0, "dropped_records": 0,
                                        "skipped_records": 0, "dead_letter_records": 0, "drops": {}}
        #: processors of the task that hand each other work, under a name they agree on
        #: (a foreign-key join's response join, found by its left values' replica)
        self.peers: dict[Any, Any] = {}

    def store(self, name: str) -> Any:
        return self.stores[name]

    def emit(self, topic: str, partition: Optional[int], timestamp: int, key: Optional[bytes],
             value: Optional[bytes], headers: tuple) -> None:
        self.output.append((topic, partition, timestamp, key, value, headers))

    def emit_rows(self, rows: Any) -> None:
        """Emit many rows as one Arrow table (``processors.columnar.OUTPUT_SCHEMA``)."""
        if self.output:
            self.emitted.append(self.output)
            self.output = []
        self.emitted.append(rows)

    def count(self, metric: str, n: int = 1) -> None:
        self.metrics[metric] = self.metrics.get(metric, 0) + n

    def drop(self, node: str, reason: str, where: Any = None, count: int = 1, detail: str = "") -> None:
        """``node`` dropped ``count`` records for ``reason``: counted and logged
        (:func:`streamlib.processors.drops.count_drop`); ``where``: the (first) record."""
        count_drop(self.metrics, node, reason, where, count, detail)

    def schedule(self, interval: int, kind: str, callback: Callable[[int], None]) -> Timer:
        """Kafka's ``ProcessorContext.schedule``: ``callback(time)`` every ``interval`` ms
        of stream time (``"stream_time"``) or wall-clock time (``"wall_clock_time"``)."""
        now = self.stream_time if kind == STREAM_TIME else self.wall_clock_time
        return self.timers.schedule(interval, kind, callback, now)

    def get_long(self, name: str, default: int = -1) -> int:
        """A task-level integer saved with :meth:`put_long` (restored with the stores)."""
        raw = self.task_state.get(name)
        return default if raw is None else _LONG.unpack(raw)[0]

    def put_long(self, name: str, value: int) -> None:
        """Save a task-level integer; it commits, rolls back and restores with the stores."""
        raw = _LONG.pack(value)
        if self.task_state.get(name) != raw:
            self.task_state[name] = raw
            self.task_state_changed.add(name)


class Processor:
    """A node of a running sub-topology: receives records, forwards to children.

    Subclasses implement :meth:`process`; stateful ones may also implement
    :meth:`flush` (end of a commit: emit what caching held back).
    """

    def __init__(self, node: Node, context: ProcessorContext):
        self.node = node
        self.name = node.name
        self.context = context
        self.children: list["Processor"] = []
        #: whether a child needs the old value of a table change (set when wiring)
        self.send_old_values = False
        #: whether table updates are held back to the end of the commit (set when wiring)
        self.caching = context.caching

    @property
    def time_aware(self) -> bool:
        """Whether the processor acts on stream time (windows, suppress): its node
        kind says so; its task then runs at every batch, and it has ``watermark()``."""
        return self.node.spec.time_aware

    def takes_batches(self, key_serde: "Serde") -> bool:
        """Whether :meth:`process_batch` may replace per-record processing when this
        processor alone reads a repartition whose keys are in ``key_serde``."""
        return False

    def folds_batches(self, key_serde: "Serde") -> bool:
        """Whether ``process_folds`` may replace per-record processing where the stage's
        plan asks for it (``InputEncoding.WINDOW_FOLDS``), as :meth:`takes_batches`."""
        return False

    def process_batch(self, rows: "pa.Table", topic: str) -> None:
        """Process a batch's rows of a repartition ``topic`` at once (key/value bytes
        as the repartition wrote them, in processing order); see :meth:`takes_batches`."""
        raise NotImplementedError(f"{type(self).__name__} processes records one by one")

    def drop(self, reason: str, where: Any = None, count: int = 1, detail: str = "") -> None:
        """This node dropped ``count`` records for ``reason`` (see :meth:`ProcessorContext.drop`)."""
        self.context.drop(self.name, reason, where, count, detail)

    def init(self) -> None:
        """Called once the task's stores are open for a new batch."""

    def process(self, record: Record) -> None:
        raise NotImplementedError

    def advance_time(self, stream_time: int) -> None:
        """The runtime moved this task to the application's stream time (a batch
        boundary under Spark): time-aware processors close what is now closed."""

    def flush(self) -> None:
        """End of a commit."""

    def process_many(self, records: list[Record]) -> None:
        """Process ``records`` in order, exactly as :meth:`process` one by one would (a
        processor may override it to take them at once where that changes nothing)."""
        for record in records:
            self.forward_all((self,), record)

    def forward(self, record: Record) -> None:
        self.forward_all(self.children, record)

    def forward_many(self, records: list[Record]) -> None:
        """Forward ``records`` in order; a lone child gets them in one call."""
        if len(self.children) == 1:
            self.children[0].process_many(records)
        else:
            for record in records:
                self.forward_all(self.children, record)

    def forward_to(self, child: "Processor", record: Record) -> None:
        self.forward_all((child,), record)

    @staticmethod
    def forward_all(children, record: Record) -> None:
        """Hand ``record`` to each child; an error names the child and the input record."""
        for child in children:
            try:
                child.process(record)
            except ProcessingError:
                raise
            except Exception as exc:
                frame = user_frame(exc.__traceback__)
                raised_at = f" (raised at {frame})" if frame else ""
                raise ProcessingError(f"{type(exc).__name__}: {exc}{raised_at}", record, child.name) from exc
