"""The Processor API as users write against it (Kafka Streams' ``Processor``,
``FixedKeyProcessor``, ``ProcessorSupplier``, ``PunctuationType``, ``Record``).

Users subclass :class:`Processor` and hand the class (or any supplier) to
``KStream.process`` / ``process_values``; :mod:`.user` runs it inside a task. Re-exported
by :mod:`streamlib.processor_api` and :mod:`streamlib`.
"""
from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

from .record import Record
from .timers import STREAM_TIME, WALL_CLOCK_TIME

if TYPE_CHECKING:
    from .user import UserProcessorContext


class PunctuationType(str, Enum):
    """Which clock a punctuator follows (Kafka's ``PunctuationType``)."""

    #: the task's stream time: fires as records (or the application's stream time) pass it
    STREAM_TIME = STREAM_TIME
    #: the wall clock: fires at batch boundaries (``advance_wall_clock_time`` in the driver)
    WALL_CLOCK_TIME = WALL_CLOCK_TIME


class RecordMetadata(NamedTuple):
    """Where the record being processed was read (Kafka's ``RecordMetadata``). Behind a
    repartition (under Spark: a shuffle), ``partition``/``offset`` name the task that
    wrote the record and its place in that task's output."""

    topic: str
    partition: int
    offset: int


class Processor:
    """A user processor: :meth:`init` once per batch (a commit; each piped record under
    ``TopologyTestDriver``) on a fresh instance, :meth:`process` per record, then
    :meth:`close`. Keep what must outlive a batch in state stores: they are
    change-logged, restored and rolled back with the batch; attributes are not.

    Examples
    --------
    >>> from streamlib import Processor, Record
    >>> class Upper(Processor):
    ...     def process(self, record: Record) -> None:
    ...         self.context.forward(record.with_value(record.value.upper()))
    """

    context: "UserProcessorContext"

    def init(self, context: "UserProcessorContext") -> None:
        """Called before the batch's records; schedule punctuators here."""
        self.context = context

    def process(self, record: Record) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement process(record)")

    def close(self) -> None:
        """Called once the batch's records are processed."""


class FixedKeyProcessor(Processor):
    """A processor for ``process_values``: it may change values, timestamps and
    headers, never keys (so no repartition follows it). It receives
    :class:`FixedKeyRecord` s and forwards records made from them."""


class ProcessorSupplier:
    """Makes a new processor per task and batch (Kafka's ``ProcessorSupplier``); may
    name the stores its processors use (``stores()``, Kafka's ``ConnectedStoreProvider``),
    which ``process()`` then adds and connects itself. A processor class, or any
    function returning a processor, is a supplier too."""

    def get(self) -> Processor:
        raise NotImplementedError

    def stores(self) -> list:
        return []


class FixedKeyRecord(Record):
    """A record whose key cannot change (Kafka's ``FixedKeyRecord``): what
    ``process_values`` processors receive; ``with_value``, ``with_timestamp`` and
    ``with_headers`` keep it fixed-key, and only such records may be forwarded."""

    __slots__ = ()

    key = property(lambda self: Record.key.__get__(self), doc="The key; it cannot be changed.")

    def __init__(self, key: Any, value: Any, timestamp: int, headers: Any = (),
                 topic: str = "", partition: int = -1, offset: int = -1):
        Record.key.__set__(self, key)
        self.value = value
        self.timestamp = timestamp
        self.headers = headers
        self.topic = topic
        self.partition = partition
        self.offset = offset

    @classmethod
    def of(cls, record: Record) -> "FixedKeyRecord":
        return cls(record.key, record.value, record.timestamp, record.headers, record.topic,
                   record.partition, record.offset)

    def with_key(self, key: Any) -> Record:
        raise TypeError("a FixedKeyRecord's key cannot change: use KStream.process() to change keys")

    def with_(self, key: Any, value: Any) -> Record:
        return self.with_key(key)

    def with_value(self, value: Any) -> "FixedKeyRecord":
        return FixedKeyRecord(self.key, value, self.timestamp, self.headers, self.topic, self.partition,
                              self.offset)

    def with_timestamp(self, timestamp: int) -> "FixedKeyRecord":
        return FixedKeyRecord(self.key, self.value, timestamp, self.headers, self.topic, self.partition,
                              self.offset)

    def with_headers(self, headers: Any) -> "FixedKeyRecord":
        return FixedKeyRecord.of(Record.with_headers(self, headers))


def make_processor(supplier: Any, node: str) -> Processor:
    """A new processor from ``supplier``: a :class:`ProcessorSupplier` (its ``get()``) or
    a callable (a processor class, a factory); anything else names the node."""
    get = getattr(supplier, "get", None)
    processor = get() if isinstance(supplier, ProcessorSupplier) or (
        callable(get) and not callable(supplier)) else supplier()
    if not hasattr(processor, "process") or not hasattr(processor, "init"):
        raise TypeError(f"{node}: the processor supplier returned {processor!r}, not a Processor "
                        "(with init(context) and process(record))")
    return processor


def record_metadata(record: Optional[Record]) -> Optional[RecordMetadata]:
    """The metadata of ``record``, None outside ``process`` (punctuation, like Kafka)."""
    if record is None or record.offset < 0:
        return None
    return RecordMetadata(record.topic, record.partition, record.offset)
