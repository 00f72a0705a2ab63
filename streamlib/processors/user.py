"""User processors (``KStream.process`` / ``process_values``) inside a task.

Every batch (a commit: a micro-batch under Spark, a piped record under
``TopologyTestDriver``) the node gets a fresh processor from the user's supplier, calls
``init(context)``, hands it the batch's records and its punctuations, then calls
``close()``. What a processor keeps across batches lives in its stores, which commit,
roll back and restore with the task; so a re-run batch or a restart sees exactly the
state the last committed batch left.

Punctuators are scheduled in ``init``; each is known by its node and the order in which
``init`` schedules it, and the time it is next due (or that it was cancelled) is task
state, committed with the stores: a punctuator fires once per interval across batches,
re-runs and restarts, as if the task had never stopped.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..node_kinds import PROCESS, PROCESS_VALUES
from ..time import Duration, to_millis
from .api import FixedKeyRecord, PunctuationType, RecordMetadata, make_processor, record_metadata
from .base import Processor, ProcessingError, ProcessorContext
from .record import Record, as_headers
from .registry import processes
from .timers import Timer
from .user_stores import USER_STORES

#: a cancelled punctuator's saved due time
_CANCELLED = -(1 << 63)


class Cancellable:
    """What ``schedule`` returns (Kafka's ``Cancellable``): :meth:`cancel` stops the
    punctuator for good (also in later batches)."""

    __slots__ = ("_timer",)

    def __init__(self, timer: Optional[Timer]):
        self._timer = timer

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    @property
    def cancelled(self) -> bool:
        return self._timer is None or self._timer.cancelled


class UserProcessorContext:
    """What a user processor sees (Kafka's ``ProcessorContext`` / ``FixedKeyProcessorContext``).

    Attributes and methods: :meth:`forward`, :meth:`get_state_store`, :meth:`schedule`,
    ``task_id``, ``partition``, ``application_id``, ``record_metadata``,
    ``current_stream_time_ms`` and ``current_system_time_ms``.
    """

    def __init__(self, node: "UserProcessorNode"):
        self._node = node
        self._task = node.context
        self.task_id: str = self._task.task_id
        self.partition: int = self._task.partition
        self.application_id: str = self._task.config.application_id
        self.processor_name: str = node.name

    # -- records -------------------------------------------------------------------------
    def forward(self, record: Record, child_name: Optional[str] = None) -> None:
        """Send ``record`` to every child, or only to the child node ``child_name``."""
        self._node.forward_user(record, child_name)

    @property
    def record_metadata(self) -> Optional[RecordMetadata]:
        """Topic, partition and offset of the record being processed; None in a punctuator."""
        return record_metadata(self._node.current)

    # -- time ----------------------------------------------------------------------------
    @property
    def current_stream_time_ms(self) -> int:
        """The task's stream time: the largest timestamp it has processed (-1: none yet)."""
        return self._task.stream_time

    @property
    def current_system_time_ms(self) -> int:
        """The wall clock as the task saw it last (the driver's mocked clock in tests)."""
        return self._task.wall_clock_time

    def schedule(self, interval: Duration, punctuation_type: Any,
                 punctuator: Callable[[int], None]) -> Cancellable:
        """Call ``punctuator(time)`` every ``interval`` of stream time or wall-clock time
        (``PunctuationType``); only from ``init``."""
        return self._node.schedule(to_millis(interval, "interval"), PunctuationType(punctuation_type),
                                   punctuator)

    # -- stores --------------------------------------------------------------------------
    def get_state_store(self, name: str) -> Any:
        """A store connected to this processor (named in ``process(..., name)``, or by
        its supplier's ``stores()``)."""
        return self._node.user_store(name)


@processes(PROCESS, PROCESS_VALUES)
class UserProcessorNode(Processor):
    """Runs one user processor in its task (see the module docstring)."""

    def __init__(self, node: Any, context: ProcessorContext):
        super().__init__(node, context)
        self.fixed_key = node.spec is PROCESS_VALUES
        #: the record being processed (None while punctuating)
        self.current: Optional[Record] = None
        self.user: Any = None
        self._user_context: Optional[UserProcessorContext] = None
        self._stores: dict[str, Any] = {}
        self._timers: list[Timer] = []
        self._initializing = False

    @property
    def time_aware(self) -> bool:
        return True   # its punctuators need the task to run at every batch

    def watermark(self) -> int:
        return self.context.stream_time

    # -- lifecycle -----------------------------------------------------------------------
    def init(self) -> None:
        self.current = None
        self._stores = {}
        self._timers = []
        self._user_context = UserProcessorContext(self)
        self.user = make_processor(self.node.params.supplier, self.name)
        self._initializing = True
        try:
            self._call(lambda: self.user.init(self._user_context), None, "init")
        finally:
            self._initializing = False

    def flush(self) -> None:
        """End of the batch: close the processor, expire what its stores no longer keep,
        save its punctuators' next due times."""
        if self.user is not None:
            self._call(self.user.close, None, "close")
        stream_time = self.context.stream_time
        for name in self.node.stores:
            typed = self.context.stores[name]
            retention = self.node.params.retention.get(name, 0)
            if retention and stream_time >= 0:
                typed.expire(stream_time - retention + 1, stream_time)
            elif hasattr(typed, "history_ms"):
                typed.expire()
        for index, timer in enumerate(self._timers):
            self.context.put_long(self._timer_key(index), _CANCELLED if timer.cancelled else timer.due)

    def _timer_key(self, index: int) -> str:
        return f"punctuator:{self.name}:{index}"

    # -- records -------------------------------------------------------------------------
    def process(self, record: Record) -> None:
        self.current = record
        try:
            user_record = FixedKeyRecord.of(record) if self.fixed_key else record
            self.user.process(user_record)
        finally:
            self.current = None

    def forward_user(self, record: Record, child_name: Optional[str]) -> None:
        if not isinstance(record, Record):
            raise TypeError(f"{self.name}: forward() takes a Record, not {record!r}")
        if self.fixed_key and not isinstance(record, FixedKeyRecord):
            raise TypeError(f"{self.name}: a process_values() processor may not change keys: forward "
                            "the record it got, or one made from it with with_value/with_timestamp/"
                            "with_headers (KStream.process() may change keys)")
        source = self.current
        headers = record.headers if isinstance(record.headers, tuple) else as_headers(record.headers)
        plain = Record(record.key, record.value, record.timestamp, headers,
                       *((source.topic, source.partition, source.offset) if source is not None else ()))
        if child_name is None:
            self.forward(plain)
            return
        child = next((c for c in self.children if c.name == child_name), None)
        if child is None:
            raise ProcessingError(f"{self.name}: unknown child {child_name!r}; its children are "
                                  f"{[c.name for c in self.children]}", source, self.name)
        self.forward_to(child, plain)

    # -- punctuation ---------------------------------------------------------------------
    def schedule(self, interval: int, kind: PunctuationType, punctuator: Callable[[int], None]) -> Cancellable:
        if not self._initializing:
            raise ProcessingError(f"{self.name}: schedule() is allowed in init() only (a processor's "
                                  "punctuators are scheduled anew each batch, their due times kept "
                                  "with its stores)", self.current, self.name)
        index = len(self._timers)
        saved = self.context.get_long(self._timer_key(index), default=None)
        now = self.context.stream_time if kind is PunctuationType.STREAM_TIME else self.context.wall_clock_time
        timer = self.context.timers.schedule(interval, kind.value, lambda time: self._punctuate(punctuator, time),
                                             now, due=None if saved in (None, _CANCELLED) else saved)
        if saved == _CANCELLED:
            timer.cancel()
        self._timers.append(timer)
        return Cancellable(timer)

    def _punctuate(self, punctuator: Callable[[int], None], time: int) -> None:
        outer, self.current = self.current, None
        try:
            self._call(lambda: punctuator(time), None, "punctuator")
        finally:
            self.current = outer

    def _call(self, call: Callable[[], Any], record: Optional[Record], what: str) -> None:
        try:
            call()
        except ProcessingError:
            raise
        except Exception as exc:
            raise ProcessingError(f"{what} failed: {type(exc).__name__}: {exc}", record, self.name) from exc

    # -- stores --------------------------------------------------------------------------
    def user_store(self, name: str) -> Any:
        store = self._stores.get(name)
        if store is not None:
            return store
        if name not in self.node.stores:
            raise ProcessingError(f"{self.name} has no access to store {name!r}: connect it with "
                                  f"process(supplier, {name!r}) (its stores: {list(self.node.stores)})",
                                  self.current, self.name)
        typed = self.context.stores[name]
        kind = self.node.params.store_kinds[name]
        store = self._stores[name] = USER_STORES[kind](typed, self._write_time)
        return store

    def _write_time(self) -> int:
        """A store write's timestamp: the record's, or in a punctuator the task's stream time."""
        if self.current is not None:
            return self.current.timestamp
        return max(self.context.stream_time, 0)
