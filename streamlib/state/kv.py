"""The task-side key-value store: a per-batch write buffer over RocksDB.

Writes stay in memory until the task commits (Kafka Streams' caching layer, with the
commit as the flush): the batch's final value per key then goes to the changelog and to
RocksDB in one WriteBatch. Reads see the pending writes.
"""
from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple, Optional, Sequence

from streamlib.state.bounds import Bounds, within
from streamlib.state.metrics import StoreMetrics
from streamlib.state.reads import KeyValue, KeyValueReads
from streamlib.state.rocksdb import RocksDB


class Changes(NamedTuple):
    """A batch's final value (None = delete) and put timestamp per changed key."""

    keys: list[bytes]
    values: list[Optional[bytes]]
    timestamps: list[Optional[int]]


def _merge(stored: Iterator[KeyValue], pending: list[tuple[bytes, Optional[bytes]]]) -> Iterator[KeyValue]:
    """Merge two key-ordered streams; a pending entry replaces the stored one, None deletes."""
    pending_iter = iter(pending)
    head = next(pending_iter, None)
    for key, value in stored:
        while head is not None and head[0] < key:
            if head[1] is not None:
                yield head
            head = next(pending_iter, None)
        if head is not None and head[0] == key:
            if head[1] is not None:
                yield head
            head = next(pending_iter, None)
        else:
            yield key, value
    while head is not None:
        if head[1] is not None:
            yield head
        head = next(pending_iter, None)


class KeyValueStore(KeyValueReads):
    """Bytes keys and values; ``put(k, None)`` deletes. Obtained from ``TaskStores[name]``."""

    def __init__(self, name: str, db: RocksDB, metrics: StoreMetrics):
        self.name = name
        self._db = db
        self._metrics = metrics
        self._pending: dict[bytes, Optional[bytes]] = {}
        self._stamps: dict[bytes, int] = {}

    def _rebind(self, db: RocksDB) -> None:
        """Point at a new RocksDB handle (after the local copy was dropped)."""
        self._db = db

    def get(self, key: bytes) -> Optional[bytes]:
        self._metrics.gets += 1
        if key in self._pending:
            return self._pending[key]
        return self._db.get(key)

    def get_many(self, keys: Sequence[bytes]) -> list[Optional[bytes]]:
        """Pending values, the rest with one RocksDB multi-get."""
        self._metrics.gets += len(keys)
        pending = self._pending
        if not pending:
            return self._db.get_many(keys)
        missing = [k for k in keys if k not in pending]
        stored = dict(zip(missing, self._db.get_many(missing)))
        return [pending[k] if k in pending else stored[k] for k in keys]

    def put(self, key: bytes, value: Optional[bytes], timestamp: Optional[int] = None) -> None:
        """Buffer a write; ``timestamp`` (ms) is the changelog record's timestamp."""
        self._metrics.puts += 1
        self._pending[key] = value
        if timestamp is not None:
            self._stamps[key] = timestamp
        elif self._stamps:
            self._stamps.pop(key, None)

    def put_many(self, items: Iterable[tuple[bytes, Optional[bytes]]],
                 timestamp: Optional[int] = None) -> None:
        items = items if isinstance(items, (list, tuple)) else list(items)
        self._metrics.puts += len(items)
        self._pending.update(items)
        if timestamp is not None:
            self._stamps.update((key, timestamp) for key, _ in items)
        elif self._stamps:
            for key, _ in items:
                self._stamps.pop(key, None)

    def delete(self, key: bytes) -> None:
        self.put(key, None)

    def _scan(self, bounds: Bounds) -> Iterator[KeyValue]:
        pending = sorted(item for item in self._pending.items() if within(item[0], bounds))
        return _merge(self._db.scan(bounds), pending)

    def approximate_num_entries(self) -> int:
        """RocksDB's estimate plus the pending puts (an upper bound for them)."""
        return self._db.approximate_num_entries() + sum(v is not None for v in self._pending.values())

    def _take_changes(self) -> Changes:
        """Hand the buffered writes to the commit and start an empty buffer."""
        keys = list(self._pending)
        changes = Changes(keys, list(self._pending.values()), [self._stamps.get(k) for k in keys])
        self._discard_changes()
        return changes

    def _discard_changes(self) -> None:
        self._pending = {}
        self._stamps = {}
