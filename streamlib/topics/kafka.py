"""The Kafka backend (``kafka://host:port[,host:port]``) on confluent-kafka.

* Partitions are chosen here with the Java client's murmur2 and passed explicitly,
  so keys land where Java producers (and Kafka Streams) put them, whatever
  librdkafka's own partitioner would do.
* Reads ``assign`` partitions (no consumer group: no join delay, no commits) and
  use ``read_committed``; offsets are tracked by the caller (Spark checkpoint).
* ``append`` is at-least-once by default: a retried batch may be written twice and
  ``producer_id``/``sequence`` are not checked. With
  ``processing_guarantee="exactly_once"`` a task's batch is one Kafka transaction
  (:meth:`KafkaBackend.begin_task`): its changelog and sink appends commit together
  with a marker of the batch id, so a re-run of a committed batch writes nothing, a
  crashed attempt leaves nothing visible to ``read_committed`` readers, and a zombie
  with the same ``transactional.id`` is fenced. An ``append`` outside a task runs in a
  transaction of its own.
* The plain producer is idempotent by default (``enable.idempotence=true``, as Kafka's
  Java client since 3.0), so a retried produce under load never writes a record
  twice; ``producer_config`` may turn it off, and (as in the Java client) settings
  idempotence cannot work with (``acks`` other than ``all``, ``retries=0``, more than
  5 requests in flight) turn the default off instead of failing.
* librdkafka reads a record timestamp of ``0`` as "now", so epoch-0 timestamps
  cannot be produced through this backend (the local log keeps them).
* Admin and metadata calls use a short ``timeout`` (default 10 s) so an
  unreachable broker fails fast with one clear line.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Iterable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec

from .base import (HEADER_TYPE, RECORD_SCHEMA, TopicBackend, TopicExists, TopicInfo, TopicNotFound,
                   TopicsError, check_topic_name)
from .partitioner import RoundRobin, default_partitioner

_log = logging.getLogger(__name__)
_log.addHandler(logging.NullHandler())  # librdkafka's chatter goes here, not to stderr


#: The task transaction of a batch that was already committed: appends are dropped.
_REPLAY = object()

#: Errors while a group coordinator loads or moves, or a transaction's offsets settle.
_COORDINATOR_MOVING = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                       KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.UNSTABLE_OFFSET_COMMIT)

#: Errors of a partition whose leader is not (yet) known: retried, not reported.
_LEADER_MOVING = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                  KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.UNKNOWN_LEADER_EPOCH,
                  KafkaError.FENCED_LEADER_EPOCH)


def producer_defaults(user_config: dict) -> dict:
    """The producer settings streamlib adds under the user's: idempotence, unless the
    user's config conflicts with it (Kafka's Java client drops the default the same way).

    >>> producer_defaults({})
    {'enable.idempotence': True}
    >>> producer_defaults({"acks": "1"})
    {}
    """
    acks = str(user_config.get("acks", user_config.get("request.required.acks", "all"))).lower()
    in_flight = int(user_config.get("max.in.flight.requests.per.connection",
                                    user_config.get("max.in.flight", 5)))
    retries = int(user_config.get("retries", user_config.get("message.send.max.retries", 1)))
    if acks not in ("all", "-1") or in_flight > 5 or retries == 0:
        return {}
    return {"enable.idempotence": True}


def _error_text(exc: BaseException) -> str:
    err = exc.args[0] if exc.args else exc
    return err.str() if isinstance(err, KafkaError) else str(err)


class KafkaBackend(TopicBackend):
    """Topics in a Kafka cluster."""

    def __init__(self, bootstrap: str, producer_config: Optional[dict] = None,
                 consumer_config: Optional[dict] = None, processing_guarantee: str = "at_least_once",
                 timeout: float = 10.0, transactional_id: Optional[str] = None):
        if processing_guarantee not in ("at_least_once", "exactly_once"):
            raise TopicsError(f"processing_guarantee must be at_least_once or exactly_once, "
                              f"got {processing_guarantee!r}")
        self.bootstrap = bootstrap
        self.url = f"kafka://{bootstrap}"
        self.timeout = timeout
        self.exactly_once = processing_guarantee == "exactly_once"
        self._common = {"bootstrap.servers": bootstrap, "logger": _log,
                        "socket.connection.setup.timeout.ms": int(timeout * 1000)}
        self._producer_config = {**self._common, **producer_defaults(producer_config or {}),
                                 **(producer_config or {})}
        self._consumer_config = {**self._common, "group.id": "streamlib-reader",
                                 "enable.auto.commit": False, "enable.partition.eof": True,
                                 "isolation.level": "read_committed",
                                 # Reads are bounded ranges of data that exists: a long
                                 # fetch poll would only delay noticing the partition end.
                                 "fetch.wait.max.ms": 50, **(consumer_config or {})}
        self._transactional_id = transactional_id
        self._admin = self._call(lambda: AdminClient(self._common), "create an admin client")
        self._producer: Optional[Producer] = None
        self._tx_producers: dict[str, Producer] = {}
        self._consumer: Optional[Consumer] = None
        self._partitions: dict[str, int] = {}
        self._round_robin = RoundRobin()
        self._delivery_errors: list[str] = []
        self._task_tx: Any = None      # the open task transaction's producer, or _REPLAY
        self._task_group: Optional[Consumer] = None
        self._task_marker = ""
        #: (topic, partition) -> last offset a transaction wrote there (delivery reports)
        self._tx_written: dict[tuple[str, int], int] = {}

    # ---- admin -------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, config: Optional[dict] = None,
                     exist_ok: bool = False) -> TopicInfo:
        check_topic_name(name)
        config = {str(k): str(v) for k, v in (config or {}).items()}
        future = self._admin.create_topics([NewTopic(name, partitions, -1, config=config)],
                                           request_timeout=self.timeout)[name]
        try:
            future.result(timeout=self.timeout)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise TopicsError(f"cannot create topic {name!r} on {self.bootstrap}: "
                                  f"{_error_text(exc)}") from None
            if not exist_ok:
                raise TopicExists(name) from None
            self._wait_for_leaders(name)
            return self.describe_topic(name)
        self._wait_for_leaders(name)
        return TopicInfo(name, partitions, config)

    def _wait_for_leaders(self, name: str) -> None:
        """Return once every partition of a new topic has a leader: the broker creates
        topics asynchronously, and reads or offset look-ups before that fail with
        "not leader for partition"."""
        deadline = time.monotonic() + self.timeout
        while True:
            topic = self._metadata().topics.get(name)
            if (topic is not None and topic.error is None and topic.partitions
                    and all(p.leader >= 0 and p.error is None for p in topic.partitions.values())):
                return
            if time.monotonic() > deadline:
                raise TopicsError(f"topic {name!r} has no leader on {self.bootstrap} "
                                  f"{self.timeout} s after its creation")
            time.sleep(0.05)

    def delete_topic(self, name: str) -> None:
        self.describe_topic(name)
        future = self._admin.delete_topics([name], request_timeout=self.timeout)[name]
        self._call(lambda: future.result(timeout=self.timeout), f"delete topic {name!r}")
        self._partitions.pop(name, None)
        # Deletion completes asynchronously: return once metadata no longer lists it.
        deadline = time.monotonic() + self.timeout
        while name in self._metadata().topics and time.monotonic() < deadline:
            time.sleep(0.05)

    def list_topics(self) -> list[str]:
        return sorted(n for n in self._metadata().topics if not n.startswith("__"))

    def describe_topic(self, name: str) -> TopicInfo:
        # Ask for all topics: a metadata request naming one may auto-create it.
        topic = self._metadata().topics.get(name)
        if topic is None or topic.error is not None:
            raise TopicNotFound(name)
        resource = ConfigResource(ConfigResource.Type.TOPIC, name)
        future = self._admin.describe_configs([resource], request_timeout=self.timeout)[resource]
        entries = self._call(lambda: future.result(timeout=self.timeout), f"describe topic {name!r}")
        config = {k: e.value for k, e in entries.items() if not e.is_default and e.value is not None}
        self._partitions[name] = len(topic.partitions)
        return TopicInfo(name, len(topic.partitions), config)

    def num_partitions(self, name: str) -> int:
        n = self._partitions.get(name)
        if n is None:
            topic = self._metadata().topics.get(name)
            if topic is None or topic.error is not None:
                raise TopicNotFound(name)
            n = self._partitions[name] = len(topic.partitions)
        return n

    # ---- produce -----------------------------------------------------------
    def produce(self, topic: str, key: Optional[bytes] = None, value: Optional[bytes] = None,
                timestamp: Optional[int] = None, headers: Optional[Iterable[tuple[str, bytes]]] = None,
                partition: Optional[int] = None) -> None:
        n = self._checked_partitions(topic, partition)
        if partition is None:
            partition = self._round_robin(n) if key is None else default_partitioner(key, n)
        self._send(self._plain_producer(), topic, partition, key, value, timestamp,
                   list(headers) if headers else None)
        self._buffering()

    def flush(self) -> None:
        if self._producer is not None:
            self._flush(self._producer)
        self._flushed()

    def append(self, topic: str, partition: int, records: pa.Table,
               producer_id: Optional[str] = None, sequence: Optional[int] = None) -> bool:
        n = self.num_partitions(topic)
        if not 0 <= partition < n:
            raise TopicsError(f"topic {topic!r} has no partition {partition} (it has {n})")
        if not self.exactly_once:
            producer = self._plain_producer()
            self._send_rows(producer, topic, partition, records)
            self._flush(producer)
            return True
        if self._task_tx is not None:  # inside begin_task()/commit_task(): join it
            if self._task_tx is _REPLAY:
                return False
            self._send_rows(self._task_tx, topic, partition, records)
            return True
        producer = self._transactional_producer(producer_id or self._transactional_id or "streamlib")
        self._call(producer.begin_transaction, "begin a transaction")
        self._tx_written = {}
        try:
            self._send_rows(producer, topic, partition, records)
            self._flush(producer)
            self._call(lambda: producer.commit_transaction(self.timeout), "commit a transaction")
        except BaseException:
            try:
                producer.abort_transaction(self.timeout)
            except KafkaException:
                pass
            raise
        self._await_readable(self._tx_written)
        return True

    # ---- task transactions (exactly_once) ------------------------------------
    def begin_task(self, transactional_id: str, batch_id: int, marker_topic: str) -> bool:
        """Start a task's batch as one Kafka transaction; every ``append`` until
        :meth:`commit_task` joins it (changelogs and sinks alike).

        A new producer with ``transactional_id`` fences any older one with the same id
        (a zombie attempt of this task) and aborts its open transaction. The batch id
        the task last committed is kept as a consumer-group offset (group
        ``transactional_id``, partition 0 of ``marker_topic``) committed inside the
        transaction, so it is committed if and only if the batch's writes are. Returns
        False if ``batch_id`` was already committed (a re-run): then appends are
        dropped, so the re-run leaves exactly one copy.
        """
        if self._task_tx is not None:
            raise TopicsError("begin_task() while a task transaction is open")
        try:
            self.num_partitions(marker_topic)
        except TopicNotFound:   # made by whoever starts the application, never by a task
            raise TopicsError(f"the batch marker topic {marker_topic!r} does not exist on "
                              f"{self.bootstrap}; create it (one partition) before the task runs") from None
        config = {**self._producer_config, "transactional.id": transactional_id,
                  "enable.idempotence": True}
        producer = self._call(lambda: Producer(config), "create a transactional producer")
        self._call(lambda: producer.init_transactions(self.timeout), "initialise transactions")
        group = self._call(lambda: Consumer({**self._common, "group.id": transactional_id,
                                             "enable.auto.commit": False,
                                             "isolation.level": "read_committed"}),
                           "create a consumer")
        try:
            done = self._committed_batch(group, marker_topic)
            if done >= batch_id:
                self._task_tx = _REPLAY
                return False
            self._call(producer.begin_transaction, "begin a transaction")
        except BaseException:
            group.close()
            raise
        self._task_tx, self._task_group, self._task_marker = producer, group, marker_topic
        self._tx_written = {}
        return True

    def commit_task(self, batch_id: int) -> dict[tuple[str, int], int]:
        """Commit the task's transaction with its batch marker (see :meth:`begin_task`).

        Returns, per ``(topic, partition)`` the transaction wrote, its end once the
        commit is readable: the position after the task's own committed records (and
        their commit marker), which is where its store copies and the driver's query
        replicas stand. Kafka writes commit markers after answering the commit, so this
        waits until ``read_committed`` readers see the records; the offset read inside
        the open transaction is from before them."""
        producer, group, self._task_tx = self._task_tx, self._task_group, None
        if producer is None or producer is _REPLAY:
            return {}
        try:
            self._flush(producer)   # every record's offset is known from here on
            marker = [TopicPartition(self._task_marker, 0, batch_id + 1)]
            self._call(lambda: producer.send_offsets_to_transaction(
                marker, group.consumer_group_metadata(), self.timeout), "commit the batch marker")
            self._call(lambda: producer.commit_transaction(self.timeout), "commit a transaction")
        except BaseException:
            self._abort(producer)
            raise
        finally:
            group.close()
        self._raise_delivery_errors()
        return self._await_readable(self._tx_written)

    def _await_readable(self, written: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Wait until ``read_committed`` readers see every ``(topic, partition)`` up to
        the last offset ``written`` there; return the ends then."""
        ends: dict[tuple[str, int], int] = {}
        deadline = time.monotonic() + self.timeout
        for topic in sorted({t for t, _ in written}):
            while True:
                now = self.end_offsets(topic)
                parts = {p: now[p] for t, p in written if t == topic}
                if all(end > written[(topic, p)] for p, end in parts.items()):
                    ends.update({(topic, p): end for p, end in parts.items()})
                    break
                if time.monotonic() > deadline:
                    raise TopicsError(f"the committed transaction's records in {topic!r} are not readable "
                                      f"on {self.bootstrap} {self.timeout} s after the commit")
                time.sleep(0.01)
        return ends

    def abort_task(self) -> None:
        """Abort the task's open transaction (nothing of it becomes visible)."""
        producer, group, self._task_tx = self._task_tx, self._task_group, None
        if producer is not None and producer is not _REPLAY:
            self._abort(producer)
            group.close()

    def _abort(self, producer: Producer) -> None:
        try:
            producer.abort_transaction(self.timeout)
            producer.poll(0)  # deliver the "purged" reports of the aborted records...
        except KafkaException:
            pass  # fenced or already failed: the broker aborts it anyway
        self._delivery_errors.clear()  # ...which are no failure: they were meant to vanish

    def _committed_batch(self, group: Consumer, marker_topic: str) -> int:
        """The last batch id committed by this group's task, -1 if none. Retries while
        an earlier transaction's offsets are still being completed."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                got = group.committed([TopicPartition(marker_topic, 0)], timeout=self.timeout)[0]
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                retriable = isinstance(err, KafkaError) and (err.retriable()
                                                             or err.code() in _COORDINATOR_MOVING)
                if not retriable or time.monotonic() > deadline:
                    raise TopicsError(f"cannot read the batch marker of {marker_topic!r} on "
                                      f"{self.bootstrap}: {_error_text(exc)}") from None
                time.sleep(0.05)
                continue
            if got.error is not None and time.monotonic() < deadline and (
                    got.error.retriable() or got.error.code() in _COORDINATOR_MOVING):
                time.sleep(0.05)
                continue
            return got.offset - 1 if got.offset >= 0 else -1

    # ---- read --------------------------------------------------------------
    def end_offsets(self, topic: str) -> dict[int, int]:
        return self._list_offsets(topic, OffsetSpec.latest())

    def start_offsets(self, topic: str) -> dict[int, int]:
        return self._list_offsets(topic, OffsetSpec.earliest())

    def read_arrow(self, topic: str, partition: int, start: int, end: int) -> pa.Table:
        """Consume ``[start, end)`` from an assigned partition (clamped to the log end)."""
        end = min(end, self.end_offsets(topic)[partition])
        if start >= end:
            return RECORD_SCHEMA.empty_table()
        consumer = self._reader()
        consumer.assign([TopicPartition(topic, partition, start)])
        offsets, stamps, keys, values, headers = [], [], [], [], []
        deadline = time.monotonic() + self.timeout
        try:
            while not offsets or offsets[-1] < end - 1:
                if time.monotonic() > deadline:
                    got = offsets[-1] + 1 if offsets else start
                    raise TopicsError(f"timed out after {self.timeout} s reading {topic}[{partition}] "
                                      f"at offset {got} of [{start}, {end}) from {self.bootstrap}")
                # Ask for exactly what is missing so consume() returns as soon as it
                # has arrived (fewer exist only after compaction or transaction markers).
                expected = min(end - (offsets[-1] + 1 if offsets else start), 10_000)
                msgs = consumer.consume(expected, timeout=0.5)
                eof = False
                for m in msgs:
                    err = m.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            eof = True
                            continue
                        raise TopicsError(f"cannot read {topic}[{partition}]: {err.str()}")
                    if m.offset() >= end:
                        eof = True
                        break
                    offsets.append(m.offset())
                    stamps.append(m.timestamp()[1])
                    keys.append(m.key())
                    values.append(m.value())
                    headers.append([{"key": k, "value": v} for k, v in m.headers() or ()])
                if eof:
                    break
        finally:
            consumer.unassign()
        return pa.table([pa.array(offsets, pa.int64()), pa.array(stamps, pa.int64()),
                         pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                         pa.array(headers, HEADER_TYPE)], schema=RECORD_SCHEMA)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None

    # ---- internals ---------------------------------------------------------
    def _call(self, fn, what: str):
        try:
            return fn()
        except KafkaException as exc:
            raise TopicsError(f"cannot {what} on {self.bootstrap}: {_error_text(exc)}") from None

    def _metadata(self):
        return self._call(lambda: self._admin.list_topics(timeout=self.timeout),
                          "reach the broker for metadata")

    def _list_offsets(self, topic: str, spec: OffsetSpec) -> dict[int, int]:
        """Offsets as a ``read_committed`` reader sees them: the end of a partition is its
        last stable offset, so an open transaction's records are not counted as
        readable. Retries while a partition's leader is still being elected."""
        n = self.num_partitions(topic)
        deadline = time.monotonic() + self.timeout
        while True:
            futures = self._admin.list_offsets({TopicPartition(topic, p): spec for p in range(n)},
                                               isolation_level=IsolationLevel.READ_COMMITTED,
                                               request_timeout=self.timeout)
            try:
                return {tp.partition: f.result(timeout=self.timeout).offset for tp, f in futures.items()}
            except FutureTimeout:   # the broker is down or restarting: say which and where
                raise TopicsError(f"cannot list offsets of {topic!r} on {self.bootstrap}: no answer "
                                  f"within {self.timeout:.0f} s (is the broker up?)") from None
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                retriable = isinstance(err, KafkaError) and (err.code() in _LEADER_MOVING
                                                             or err.retriable())
                if not retriable or time.monotonic() > deadline:
                    raise TopicsError(f"cannot list offsets of {topic!r} on {self.bootstrap}: "
                                      f"{_error_text(exc)}") from None
                time.sleep(0.05)

    def _plain_producer(self) -> Producer:
        if self._producer is None:
            # Its delivery reports only matter for errors (:meth:`_on_delivery`): librdkafka
            # then skips a Python callback per delivered record.
            config = {"delivery.report.only.error": True, **self._producer_config}
            self._producer = self._call(lambda: Producer(config), "create a producer")
        return self._producer

    def _transactional_producer(self, transactional_id: str) -> Producer:
        producer = self._tx_producers.get(transactional_id)
        if producer is None:
            # Transactions need idempotence whatever the plain producer uses.
            config = {**self._producer_config, "transactional.id": transactional_id,
                      "enable.idempotence": True}
            producer = self._call(lambda: Producer(config), "create a transactional producer")
            self._call(lambda: producer.init_transactions(self.timeout), "initialise transactions")
            self._tx_producers[transactional_id] = producer
        return producer

    def _on_delivery(self, err: Optional[KafkaError], _msg: Any) -> None:
        if err is not None:
            self._delivery_errors.append(err.str())

    def _on_tx_delivery(self, err: Optional[KafkaError], msg: Any) -> None:
        """A transactional record's report: also where it went (see :meth:`commit_task`)."""
        self._on_delivery(err, msg)
        if err is None:
            where = (msg.topic(), msg.partition())
            self._tx_written[where] = max(self._tx_written.get(where, -1), msg.offset())

    def _send(self, producer: Producer, topic: str, partition: int, key: Optional[bytes],
              value: Optional[bytes], timestamp: Optional[int], headers: Optional[list]) -> None:
        kwargs = {"timestamp": timestamp} if timestamp is not None else {}
        reported = self._on_delivery if producer is self._producer else self._on_tx_delivery
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=partition, headers=headers,
                                 on_delivery=reported, **kwargs)
                return
            except BufferError:
                producer.poll(0.05)  # local queue full: let deliveries drain
            except KafkaException as exc:
                raise TopicsError(f"cannot produce to {topic!r}: {_error_text(exc)}") from None

    def _send_rows(self, producer: Producer, topic: str, partition: int, records: pa.Table) -> None:
        """:meth:`_send` of every row of ``records``, in order, with less Python per row:
        the headers are converted once when every row carries the same ones (a
        changelog's batch header) or none, and ``produce`` is called directly."""
        timestamps = records.column("timestamp").to_pylist()
        keys = records.column("key").to_pylist()
        values = records.column("value").to_pylist()
        headers = _rows_headers(records.column("headers"))
        reported = self._on_delivery if producer is self._producer else self._on_tx_delivery
        produce = producer.produce
        i, n = 0, len(keys)
        while i < n:
            try:
                for i in range(i, n):   # noqa: B020 - resumes at the row a full queue refused
                    ts = timestamps[i]
                    if ts is None:
                        produce(topic, value=values[i], key=keys[i], partition=partition,
                                headers=headers[i], on_delivery=reported)
                    else:
                        produce(topic, value=values[i], key=keys[i], partition=partition,
                                headers=headers[i], on_delivery=reported, timestamp=ts)
                i = n
            except BufferError:
                producer.poll(0.05)  # local queue full: let deliveries drain, then row i again
            except KafkaException as exc:
                raise TopicsError(f"cannot produce to {topic!r}: {_error_text(exc)}") from None

    def _flush(self, producer: Producer) -> None:
        remaining = producer.flush(self.timeout)
        if remaining:
            raise TopicsError(f"{remaining} record(s) not delivered to {self.bootstrap} "
                              f"within {self.timeout} s")
        self._raise_delivery_errors()

    def _raise_delivery_errors(self) -> None:
        if self._delivery_errors:
            errors, self._delivery_errors = self._delivery_errors, []
            raise TopicsError(f"{len(errors)} record(s) failed delivery: {errors[0]}")

    def _reader(self) -> Consumer:
        if self._consumer is None:
            self._consumer = self._call(lambda: Consumer(self._consumer_config), "create a consumer")
        return self._consumer


def _headers(hdrs: Optional[list]) -> Optional[list[tuple[str, bytes]]]:
    return [(h["key"], h["value"]) for h in hdrs] if hdrs else None


def _rows_headers(column: pa.ChunkedArray) -> list:
    """Each row's headers as ``produce`` takes them (None: none). Converted once when
    every row has none or the same ones (a changelog append: its batch header), row by
    row otherwise.

    >>> from streamlib.topics.base import HEADER_TYPE
    >>> _rows_headers(pa.chunked_array([pa.array([[], []], HEADER_TYPE)]))
    [None, None]
    >>> same = [{"key": "b", "value": b"1"}]
    >>> _rows_headers(pa.chunked_array([pa.array([same, same], HEADER_TYPE)]))
    [[('b', b'1')], [('b', b'1')]]
    >>> _rows_headers(pa.chunked_array([pa.array([same, None, []], HEADER_TYPE)]))
    [[('b', b'1')], None, None]
    >>> _rows_headers(pa.chunked_array([pa.array([same, [{"key": "b", "value": b"2"}]], HEADER_TYPE)]))
    [[('b', b'1')], [('b', b'2')]]
    """
    n = len(column)
    if n == 0:
        return []
    lists = column.combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(lists), 0)
    if not pc.any(pc.not_equal(lengths, 0)).as_py():
        return [None] * n
    if lists.null_count == 0 and pc.all(pc.equal(lengths, lengths[0])).as_py():
        width = lengths[0].as_py()
        flat = pc.list_flatten(lists)
        repeated = pa.array(np.arange(n * width, dtype=np.int64) % width)
        # (a null header value compares as null: not the same, converted row by row)
        if all(pc.all(pc.fill_null(pc.equal(flat.field(f), flat.field(f).slice(0, width).take(repeated)),
                                   False)).as_py() for f in ("key", "value")):
            one = _headers(lists[0].as_py())
            return [one] * n
    return [_headers(h) for h in lists.to_pylist()]
