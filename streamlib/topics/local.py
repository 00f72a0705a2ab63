"""The embedded durable log (``local://PATH``): topics as directories on disk.

``PATH/<topic>/topic.json`` holds the partition count and config; each partition
is a :class:`~streamlib.topics.partition_log.PartitionLog` in ``PATH/<topic>/<n>/``.
Several processes may use the same ``PATH`` at once (see ``partition_log``).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import time
import uuid
from contextlib import nullcontext
from typing import Callable, ContextManager, Iterable, Optional, TypeVar

import numpy as np
import pyarrow as pa

from .base import (APPEND_SCHEMA, HEADER_TYPE, MAX_MESSAGE_BYTES, RecordTooLarge, TopicBackend, TopicExists,
                   TopicInfo, TopicNotFound, TopicsError, check_record_sizes, check_timestamps, check_topic_name,
                   raise_invalid_timestamp, timestamp_limit)
from .epochs import History, first_epoch, write_history
from .fsyncs import deferred_fsyncs
from .partition_log import DEFAULT_SEGMENT_BYTES, Compaction, PartitionDeleted, PartitionLog
from .partitioner import RoundRobin, partition_array

T = TypeVar("T")

_META = "topic.json"
#: produce() writes a partition's buffer once it holds this many records or bytes.
BUFFER_RECORDS = 100_000
BUFFER_BYTES = 32 * 1024 * 1024


class _Pending:
    """Records produced to one topic and not yet appended, kept column-wise.

    Key partitioning is deferred to :meth:`split`, where it runs vectorised over
    the whole buffer (``-1`` in ``partitions`` means "by key")."""

    __slots__ = ("partitions", "timestamps", "keys", "values", "headers", "nbytes")

    def __init__(self) -> None:
        self.partitions: list[int] = []
        self.timestamps: list[int] = []
        self.keys: list[Optional[bytes]] = []
        self.values: list[Optional[bytes]] = []
        self.headers: list = []
        self.nbytes = 0

    @classmethod
    def of(cls, tables: list[tuple[int, pa.Table]]) -> "_Pending":
        """Records of ``(partition, APPEND_SCHEMA table)`` pairs buffered again."""
        pending = cls()
        for partition, table in tables:
            for row in table.to_pylist():
                pending.partitions.append(partition)
                pending.timestamps.append(row["timestamp"])
                pending.keys.append(row["key"])
                pending.values.append(row["value"])
                pending.headers.append(tuple((h["key"], h["value"]) for h in row["headers"]) or None)
                pending.nbytes += len(row["key"] or b"") + len(row["value"] or b"")
        return pending

    def table(self) -> pa.Table:
        n = len(self.keys)
        if any(self.headers):
            headers = pa.array([[{"key": k, "value": v} for k, v in h or ()] for h in self.headers],
                               HEADER_TYPE)
        else:
            headers = pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, np.int32)),
                                               pa.array([], HEADER_TYPE.value_type))
        return pa.table([pa.array(self.timestamps, pa.int64()), pa.array(self.keys, pa.binary()),
                         pa.array(self.values, pa.binary()), headers], schema=APPEND_SCHEMA)

    def split(self, num_partitions: int) -> dict[int, pa.Table]:
        """The buffered records per partition, each in produce order."""
        table = self.table()
        parts = np.array(self.partitions, np.int32)
        by_key = np.nonzero(parts < 0)[0]
        if len(by_key):
            parts[by_key] = partition_array(table.column("key").take(by_key), num_partitions)
        return {int(p): table.take(np.nonzero(parts == p)[0]) for p in np.unique(parts)}


class LocalBackend(TopicBackend):
    """Topics in a directory tree; durable, multi-process safe, no broker needed.

    ``fsync=True`` (default) makes every append durable before it returns;
    ``fsync=False`` survives process crashes but not power loss, for speed.
    """

    def __init__(self, root: str, fsync: bool = True, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 create: bool = True):
        self.root = os.path.abspath(root)
        self.url = f"local://{self.root}"
        self.fsync = fsync
        self.segment_bytes = segment_bytes
        if create:
            os.makedirs(self.root, exist_ok=True)
        elif not os.path.isdir(self.root):
            # ``create=False``: a Spark task's open (topics.spec); an empty log made on an
            # executor that cannot see the driver's would hide the mistake
            raise TopicsError(f"the local log directory {self.root} does not exist on {socket.gethostname()}: "
                              f"local:// topics need one machine or a path every executor sees; "
                              f"on a cluster use Kafka (kafka://host:9092)")
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._partitions: dict[str, int] = {}
        self._configs: dict[str, dict] = {}
        self._pending: dict[str, _Pending] = {}
        self._round_robin = RoundRobin()

    # ---- admin -------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, config: Optional[dict] = None,
                     exist_ok: bool = False) -> TopicInfo:
        check_topic_name(name)
        if partitions < 1:
            raise TopicsError(f"topic {name!r} needs at least one partition, got {partitions}")
        info = TopicInfo(name, partitions, {str(k): str(v) for k, v in (config or {}).items()})
        # Build the topic in a private directory and rename it in: atomic, and two
        # concurrent creators cannot both win.
        tmp = os.path.join(self.root, f".creating-{name}-{uuid.uuid4().hex}")
        os.makedirs(tmp)
        epoch = first_epoch()  # above every epoch of a topic this one may replace
        for p in range(partitions):
            os.mkdir(os.path.join(tmp, str(p)))
            write_history(os.path.join(tmp, str(p)), ((epoch, 0),), fsync=False)  # as durable as topic.json
        with open(os.path.join(tmp, _META), "w") as f:
            json.dump({"partitions": partitions, "config": info.config}, f)
        try:
            os.rename(tmp, self._topic_dir(name))
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not exist_ok:
                raise TopicExists(name) from None
            return self.describe_topic(name)
        return info

    def delete_topic(self, name: str) -> None:
        self.describe_topic(name)
        self._pending.pop(name, None)
        self._forget(name)
        doomed = os.path.join(self.root, f".deleting-{name}-{uuid.uuid4().hex}")
        try:
            os.rename(self._topic_dir(name), doomed)
        except FileNotFoundError:
            raise TopicNotFound(name) from None
        shutil.rmtree(doomed, ignore_errors=True)

    def list_topics(self) -> list[str]:
        return sorted(n for n in os.listdir(self.root)
                      if not n.startswith(".") and os.path.exists(os.path.join(self.root, n, _META)))

    def describe_topic(self, name: str) -> TopicInfo:
        check_topic_name(name)
        try:
            with open(os.path.join(self._topic_dir(name), _META)) as f:
                meta = json.load(f)
        except FileNotFoundError:
            raise TopicNotFound(name) from None
        return TopicInfo(name, meta["partitions"], meta["config"])

    def _config(self, name: str) -> dict:
        """The topic's config, read once per backend (as its partition count is)."""
        config = self._configs.get(name)
        if config is None:
            config = self._configs[name] = self.describe_topic(name).config
        return config

    def num_partitions(self, name: str) -> int:
        n = self._partitions.get(name)
        if n is None:
            n = self._partitions[name] = self.describe_topic(name).partitions
        return n

    # ---- data --------------------------------------------------------------
    def produce(self, topic: str, key: Optional[bytes] = None, value: Optional[bytes] = None,
                timestamp: Optional[int] = None, headers: Optional[Iterable[tuple[str, bytes]]] = None,
                partition: Optional[int] = None) -> None:
        n = self._checked_partitions(topic, partition)
        size = (len(key) if key else 0) + (len(value) if value else 0)
        if size > MAX_MESSAGE_BYTES:
            limit = int(self.describe_topic(topic).config.get("max.message.bytes", MAX_MESSAGE_BYTES))
            if size > limit:
                raise RecordTooLarge(f"a record of {size} bytes exceeds topic {topic!r}'s max.message.bytes "
                                     f"{limit}; raise the topic's max.message.bytes or make the record smaller")
        if timestamp is not None and timestamp > timestamp_limit(self._config(topic)):
            raise_invalid_timestamp(topic, timestamp, self._config(topic), partition)
        if partition is None:
            partition = self._round_robin(n) if key is None else -1
        pending = self._pending.get(topic)
        if pending is None:
            pending = self._pending[topic] = _Pending()
        pending.partitions.append(partition)
        pending.timestamps.append(time.time_ns() // 1_000_000 if timestamp is None else timestamp)
        pending.keys.append(key)
        pending.values.append(value)
        pending.headers.append(tuple(headers) if headers else None)
        pending.nbytes += (len(key) if key else 0) + (len(value) if value else 0)
        self._buffering()
        if len(pending.keys) >= BUFFER_RECORDS or pending.nbytes >= BUFFER_BYTES:
            self._write_pending(topic)

    def flush(self) -> None:
        for topic in list(self._pending):
            self._write_pending(topic)
        self._flushed()

    def group_commit(self) -> ContextManager[None]:
        return deferred_fsyncs() if self.fsync else nullcontext()

    def append(self, topic: str, partition: int, records: pa.Table,
               producer_id: Optional[str] = None, sequence: Optional[int] = None) -> bool:
        check_record_sizes(topic, records, self._config(topic), partition)
        check_timestamps(topic, records.column("timestamp"), self._config(topic), partition)
        return self._appended(topic, partition, lambda: self._current(
            topic, lambda: self._log(topic, partition).append(records, producer_id, sequence)))

    def end_offsets(self, topic: str) -> dict[int, int]:
        return self._current(topic, lambda: {p: self._log(topic, p).end_offset()
                                             for p in range(self.num_partitions(topic))})

    def start_offsets(self, topic: str) -> dict[int, int]:
        return self._current(topic, lambda: {p: self._log(topic, p).start_offset()
                                             for p in range(self.num_partitions(topic))})

    def read_arrow(self, topic: str, partition: int, start: int, end: int) -> pa.Table:
        return self._current(topic, lambda: self._log(topic, partition).read_arrow(start, end))

    def epoch_history(self, topic: str, partition: int) -> History:
        return self._current(topic, lambda: self._log(topic, partition).epochs())

    def compact(self, topic: str) -> None:
        for p in range(self.num_partitions(topic)):
            self._log(topic, p).compact()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            for log in self._logs.values():
                log.close()
            self._logs.clear()

    # ---- internals ---------------------------------------------------------
    def _topic_dir(self, name: str) -> str:
        return os.path.join(self.root, name)

    def _current(self, topic: str, action: Callable[[], T]) -> T:
        """Run ``action``; if another process deleted ``topic`` under this backend's
        cached handles, forget them and run it once more, against the topic as it is
        now: missing (``TopicNotFound``) or created anew."""
        try:
            return action()
        except PartitionDeleted:
            self._forget(topic)
            return action()

    def _forget(self, topic: str) -> None:
        for key in [k for k in self._logs if k[0] == topic]:
            self._logs.pop(key).close()
        self._partitions.pop(topic, None)
        self._configs.pop(topic, None)

    def _log(self, topic: str, partition: int) -> PartitionLog:
        log = self._logs.get((topic, partition))
        if log is None:
            n = self.num_partitions(topic)
            if not 0 <= partition < n:
                raise TopicsError(f"topic {topic!r} has no partition {partition} (it has {n})")
            path = os.path.join(self._topic_dir(topic), str(partition))
            compaction = Compaction.from_config(self.describe_topic(topic).config)
            log = self._logs[(topic, partition)] = PartitionLog(path, self.fsync, self.segment_bytes,
                                                                compaction)
        return log

    def _write_pending(self, topic: str) -> None:
        """Append what ``produce()`` buffered for ``topic``; what an append could not
        write (a full disk) stays buffered for the next ``flush()``, and it says why."""
        tables = sorted(self._pending.pop(topic).split(self.num_partitions(topic)).items())
        for i, (partition, table) in enumerate(tables):
            try:
                self._appended(topic, partition, lambda: self._log(topic, partition).append(table))
            except BaseException:
                self._pending[topic] = _Pending.of(tables[i:])
                raise

    def _appended(self, topic: str, partition: int, append: Callable[[], T]) -> T:
        """``append()``, an ``OSError`` (a full disk: ENOSPC) said as the log's own error
        naming where; the partial frame it left is cut by the next writer."""
        try:
            return append()
        except OSError as exc:
            raise TopicsError(f"topic {topic!r} partition {partition}: cannot append ({exc.strerror or exc}); "
                              f"nothing of this append is readable; it can be made again once there is "
                              f"room") from exc
