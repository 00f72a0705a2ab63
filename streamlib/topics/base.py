"""The topic abstraction shared by every backend.

A topic is a named set of partitions; a partition is an append-only sequence of
records addressed by offset. Backends (``local``, ``kafka``) implement
:class:`TopicBackend`; everything above this package talks only to that class.
"""
from __future__ import annotations

import atexit
# pyarrow imports this lazily (pandas_compat), which registers an exit hook: at exit
# (flushing below) that is too late and fails. Import it now.
import concurrent.futures.thread  # noqa: F401
import re
import sys
from abc import ABC, abstractmethod
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import ContextManager, Iterable, NamedTuple, Optional, Sequence

import pyarrow as pa

Headers = tuple[tuple[str, bytes], ...]

#: Arrow schema of records as stored and read (one row per record).
HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
RECORD_SCHEMA = pa.schema(
    [
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", HEADER_TYPE),
    ]
)
#: Schema of records handed to :meth:`TopicBackend.append` (offsets are assigned).
APPEND_SCHEMA = pa.schema([f for f in RECORD_SCHEMA if f.name != "offset"])


class Record(NamedTuple):
    """One record read from a topic."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: Headers = ()


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int
    config: dict = field(default_factory=dict)


class TopicsError(Exception):
    """Base class of errors raised by topic backends."""


class TopicNotFound(TopicsError):
    def __init__(self, topic: str):
        super().__init__(f"unknown topic {topic!r}")
        self.topic = topic


class RecordTooLarge(TopicsError):
    """A record is larger than its topic's ``max.message.bytes`` (Kafka's
    ``RecordTooLargeException``); nothing of the produce or append was written."""


#: Kafka's default ``max.message.bytes`` of a topic.
MAX_MESSAGE_BYTES = 1_048_588


def check_record_sizes(topic: str, records: pa.Table, config: dict, partition: Optional[int] = None) -> None:
    """Raise :class:`RecordTooLarge` if a record of ``records`` (key + value + headers)
    exceeds the topic's ``max.message.bytes``."""
    import pyarrow.compute as pc

    limit = int(config.get("max.message.bytes", MAX_MESSAGE_BYTES))
    if records.num_rows == 0:
        return
    size = pc.add(pc.fill_null(pc.binary_length(records.column("key")), 0),
                  pc.fill_null(pc.binary_length(records.column("value")), 0))
    largest = pc.max(size).as_py()
    if largest > limit:
        row = pc.index(size, largest).as_py()
        where = f" partition {partition}" if partition is not None else ""
        raise RecordTooLarge(f"a record of {largest} bytes (row {row} of the append) exceeds topic {topic!r}"
                             f"{where}'s max.message.bytes {limit}; raise the topic's max.message.bytes "
                             "or make the record smaller")


class InvalidTimestamp(TopicsError):
    """A record's timestamp is further ahead of now than its topic's
    ``message.timestamp.after.max.ms`` (Kafka's ``InvalidTimestampException``, KIP-937):
    such a record would move stream time there and make every later record late.
    Nothing of the produce or append was written."""


#: Kafka's (4.0 on) default ``message.timestamp.after.max.ms`` of a topic: one hour.
TIMESTAMP_AFTER_MAX_MS = 3_600_000


def timestamp_limit(config: dict, now_ms: Optional[int] = None) -> int:
    """The largest record timestamp a topic with ``config`` accepts now."""
    import time

    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    return now + int(config.get("message.timestamp.after.max.ms", TIMESTAMP_AFTER_MAX_MS))


def check_timestamps(topic: str, timestamps: Sequence[int] | pa.Array | pa.ChunkedArray, config: dict,
                     partition: Optional[int] = None, now_ms: Optional[int] = None) -> None:
    """Raise :class:`InvalidTimestamp` if a timestamp is more than the topic's
    ``message.timestamp.after.max.ms`` ahead of now.

    >>> check_timestamps("t", [5, 253402300799999], {}, now_ms=1000)
    Traceback (most recent call last):
    ...
    streamlib.topics.base.InvalidTimestamp: topic 't': a record's timestamp 253402300799999 is \
253402300798999 ms ahead of now (1000), more than the topic's message.timestamp.after.max.ms \
3600000; fix the record's timestamp (or the producer's clock), or raise the topic's \
message.timestamp.after.max.ms
    """
    import pyarrow.compute as pc

    if len(timestamps) == 0:
        return
    latest = pc.max(timestamps).as_py() if not isinstance(timestamps, (list, tuple)) else max(timestamps)
    limit = timestamp_limit(config, now_ms)
    if latest is not None and latest > limit:
        raise_invalid_timestamp(topic, latest, config, partition, now_ms)


def raise_invalid_timestamp(topic: str, timestamp: int, config: dict, partition: Optional[int] = None,
                            now_ms: Optional[int] = None) -> None:
    """Raise the :class:`InvalidTimestamp` of a record ``timestamp`` past the limit."""
    allowed = int(config.get("message.timestamp.after.max.ms", TIMESTAMP_AFTER_MAX_MS))
    now = timestamp_limit(config, now_ms) - allowed
    where = f" partition {partition}" if partition is not None else ""
    raise InvalidTimestamp(f"topic {topic!r}{where}: a record's timestamp {timestamp} is {timestamp - now} ms "
                           f"ahead of now ({now}), more than the topic's message.timestamp.after.max.ms "
                           f"{allowed}; fix the record's timestamp (or the producer's clock), or raise the "
                           f"topic's message.timestamp.after.max.ms")


class TopicExists(TopicsError):
    def __init__(self, topic: str):
        super().__init__(f"topic {topic!r} already exists")
        self.topic = topic


_LEGAL_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def check_topic_name(name: str) -> None:
    """Kafka's topic name rule, which also keeps names safe as directory names."""
    if not _LEGAL_TOPIC_NAME.match(name) or name in (".", ".."):
        raise TopicsError(f"illegal topic name {name!r}: use 1-249 of [A-Za-z0-9._-]")


class TopicBackend(ABC):
    """A place where topics live. Chosen by URL with :func:`streamlib.topics.open_backend`."""

    url: str

    @abstractmethod
    def create_topic(self, name: str, partitions: int = 1, config: Optional[dict] = None,
                     exist_ok: bool = False) -> TopicInfo: ...

    @abstractmethod
    def delete_topic(self, name: str) -> None: ...

    @abstractmethod
    def list_topics(self) -> list[str]: ...

    @abstractmethod
    def describe_topic(self, name: str) -> TopicInfo:
        """Raise :class:`TopicNotFound` for an unknown topic."""

    def num_partitions(self, name: str) -> int:
        return self.describe_topic(name).partitions

    def _checked_partitions(self, topic: str, partition: Optional[int]) -> int:
        """The topic's partition count, after checking an explicit ``partition``."""
        n = self.num_partitions(topic)
        if partition is not None and not 0 <= partition < n:
            raise TopicsError(f"topic {topic!r} has no partition {partition} (it has {n})")
        return n

    @abstractmethod
    def produce(self, topic: str, key: Optional[bytes] = None, value: Optional[bytes] = None,
                timestamp: Optional[int] = None, headers: Optional[Iterable[tuple[str, bytes]]] = None,
                partition: Optional[int] = None) -> None:
        """Send one record. ``partition=None`` picks it with :func:`default_partitioner`
        (round robin for a ``None`` key); ``timestamp=None`` means now. Call :meth:`flush`
        before relying on the record being readable."""

    @abstractmethod
    def append(self, topic: str, partition: int, records: pa.Table,
               producer_id: Optional[str] = None, sequence: Optional[int] = None) -> bool:
        """Append a table with :data:`APPEND_SCHEMA` to one partition as one unit.

        With ``producer_id`` and ``sequence`` the append is idempotent: if this
        producer already appended ``sequence`` (or a later one) to this partition,
        nothing is written and ``False`` is returned. The local log makes the unit
        atomic; Kafka makes it at-least-once unless the backend runs transactions.
        """

    def flush(self) -> None:
        """Wait until every produced record is durable and readable."""

    def _buffering(self) -> None:
        """``produce()`` buffered a record: flush this backend at interpreter exit unless
        :meth:`_flushed` is called first (a strong reference keeps it alive until then)."""
        _BUFFERING[id(self)] = self

    def _flushed(self) -> None:
        """Nothing is buffered any more."""
        _BUFFERING.pop(id(self), None)

    def group_commit(self) -> ContextManager[None]:
        """A block whose appends (of this thread) are all durable when it exits, made
        durable together rather than one by one (the local log fsyncs once per file
        written, concurrently, at the end); appends stay readable at once. Default:
        appends are durable when they return, so the block does nothing more."""
        return nullcontext()

    @abstractmethod
    def end_offsets(self, topic: str) -> dict[int, int]:
        """partition -> the offset the next appended record will get."""

    @abstractmethod
    def start_offsets(self, topic: str) -> dict[int, int]:
        """partition -> the smallest offset still stored (log start)."""

    @abstractmethod
    def read_arrow(self, topic: str, partition: int, start: int, end: int) -> pa.Table:
        """Records with ``start <= offset < end`` that still exist, as a table with
        :data:`RECORD_SCHEMA`, in offset order."""

    def epoch_history(self, topic: str, partition: int) -> Optional[tuple[tuple[int, int], ...]]:
        """The partition's log epochs, ``((epoch, first offset), ...)``, oldest first (see
        :mod:`streamlib.topics.epochs`), or ``None`` where the backend keeps none."""
        return None

    def read(self, topic: str, partition: int, start: int, end: int) -> list[Record]:
        """Records with ``start <= offset < end`` that still exist, in offset order."""
        return records_from_arrow(topic, partition, self.read_arrow(topic, partition, start, end))

    def compact(self, topic: str) -> None:
        """Drop records superseded by a later record with the same key (and keys whose
        latest record is a tombstone), for ``cleanup.policy=compact`` topics."""

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


#: Backends holding produced records not yet flushed, by id.
_BUFFERING: dict[int, TopicBackend] = {}


@atexit.register
def _flush_at_exit() -> None:
    """A Kafka producer's promise: records produced and never flushed are written when
    the interpreter exits, or the process says loudly that they are lost."""
    for backend in list(_BUFFERING.values()):
        try:
            backend.flush()
        except BaseException as exc:  # noqa: BLE001 - report whatever stopped the flush
            print(f"streamlib: error: records produced to {getattr(backend, 'url', backend)!r} and "
                  f"buffered at exit could not be written, they are LOST: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
        _BUFFERING.pop(id(backend), None)


def records_to_arrow(records: Sequence[tuple]) -> pa.Table:
    """Build an :data:`APPEND_SCHEMA` table from ``(key, value, timestamp, headers)`` tuples."""
    keys, values, stamps, headers = [], [], [], []
    for key, value, timestamp, hdrs in records:
        keys.append(key)
        values.append(value)
        stamps.append(timestamp)
        headers.append([{"key": k, "value": v} for k, v in (hdrs or ())])
    return pa.table([pa.array(stamps, pa.int64()), pa.array(keys, pa.binary()),
                     pa.array(values, pa.binary()), pa.array(headers, HEADER_TYPE)],
                    schema=APPEND_SCHEMA)


def records_from_arrow(topic: str, partition: int, table: pa.Table) -> list[Record]:
    cols = table.to_pydict()
    return [
        Record(topic, partition, off, ts, k, v, tuple((h["key"], h["value"]) for h in (hs or ())))
        for off, ts, k, v, hs in zip(cols["offset"], cols["timestamp"], cols["key"],
                                     cols["value"], cols["headers"])
    ]
