"""A local replica of a global table: every partition of its topic in one RocksDB.

Each task that joins a global table keeps its own replica (``<task dir>/__global__/
<store>``) and catches it up from the global topic, read through the topics backend, at
the start of every batch: only the records since the offsets the replica remembers
(kept with the data, per topic partition, in the same WriteBatch), like a changelog
restore. The replica is per task, not per executor: RocksDB admits one writer per
directory, and tasks of one executor run concurrently, so a shared replica would make
them wait for each other's catch-up; per task, each catch-up is incremental and
independent, at the cost of one copy of the (small, by design) global table per task.
"""
from __future__ import annotations

import os
import time
from typing import Any, Iterable, Optional

from streamlib.state.kv import KeyValueStore
from streamlib.state.metrics import StoreMetrics
from streamlib.state.rocksdb import RocksDB
from streamlib.state.timestamped import encode_timestamped

#: the directory of a task's replicas, beside its stores
GLOBAL_DIR = "__global__"


def _offset_key(partition: int) -> bytes:
    return f"offset.{partition}".encode()


class GlobalReplica:
    """A global table's records, latest value per key with its timestamp (the layout of
    a timestamped key-value store, so the usual typed store reads it)."""

    def __init__(self, name: str, path: str, topic: str, lock_timeout: float = 30.0,
                 chunk: int = 10_000):
        self.name = name
        self.topic = topic
        self._chunk = chunk
        self.metrics = StoreMetrics()
        self._db = RocksDB.open(path, lock_timeout)
        #: the read side processors see (through a typed key-value store)
        self.kv = KeyValueStore(name, self._db, self.metrics)

    def apply(self, records: Iterable[tuple[Optional[bytes], Optional[bytes], int]],
              meta: Optional[dict[bytes, Optional[bytes]]] = None) -> int:
        """Write ``(key, value, timestamp)`` records (a ``None`` value deletes the key; a
        ``None`` key is skipped, as Kafka's global store does); returns how many."""
        items = [(key, None if value is None else encode_timestamped(value, ts))
                 for key, value, ts in records if key is not None]
        self._db.write(items, meta or {})
        self.kv._discard_changes()   # it remembers values it read: they may have changed
        return len(items)

    def catch_up(self, backend: Any) -> None:
        """Apply the global topic's records this replica has not seen yet, partition by
        partition, up to the end offsets as of now."""
        started = time.perf_counter()
        starts = backend.start_offsets(self.topic)
        for partition, end in sorted(backend.end_offsets(self.topic).items()):
            raw = self._db.meta_get(_offset_key(partition))
            offset = max(starts[partition], 0 if raw is None else int(raw))
            while offset < end:
                hi = min(offset + self._chunk, end)
                table = backend.read_arrow(self.topic, partition, offset, hi)
                rows = zip(table.column("key").to_pylist(), table.column("value").to_pylist(),
                           table.column("timestamp").to_pylist())
                self.metrics.restored_records += self.apply(
                    rows, {_offset_key(partition): str(hi).encode()})
                offset = hi
        self.metrics.restore_seconds += time.perf_counter() - started

    def close(self) -> None:
        self._db.close()


def open_global_replicas(task_dir: str, topics: dict[str, str], backend: Any = None,
                         lock_timeout: float = 30.0) -> dict[str, GlobalReplica]:
    """Open (and, given a ``backend``, catch up) the replicas of ``topics`` (store name ->
    global topic) under ``task_dir``."""
    replicas: dict[str, GlobalReplica] = {}
    try:
        for name, topic in topics.items():
            replica = replicas[name] = GlobalReplica(
                name, os.path.join(task_dir, GLOBAL_DIR, name), topic, lock_timeout)
            if backend is not None:
                replica.catch_up(backend)
    except BaseException:
        for replica in replicas.values():
            replica.close()
        raise
    return replicas
