"""The task-side key-value store: a per-batch write buffer over RocksDB.

Writes stay in memory until the task commits (Kafka Streams' caching layer, with the
commit as the flush): the batch's final value per key then goes to the changelog and to
RocksDB in one WriteBatch. Reads see the pending writes. Values read from RocksDB are
remembered for the batch: repeated reads stay in memory, and the commit's undo record
(the value before the batch of every written key) needs no second RocksDB read for the
usual read-modify-write (measured: the multi-get it saves is ~120 ms for 50k keys).
"""
from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple, Optional, Sequence

from streamlib.state.bounds import Bounds, within
from streamlib.state.metrics import StoreMetrics
from streamlib.state.reads import KeyValue, KeyValueReads
from streamlib.state.rocksdb import RocksDB


class Changes(NamedTuple):
    """A batch's final value (None = delete), put timestamp and value before the batch
    (None = absent) per changed key."""

    keys: list[bytes]
    values: list[Optional[bytes]]
    timestamps: list[Optional[int]]
    prior: list[Optional[bytes]]


def _merge(stored: Iterator[KeyValue], pending: list[tuple[bytes, Optional[bytes]]],
           descending: bool = False) -> Iterator[KeyValue]:
    """Merge two key-ordered streams (both ascending, or both ``descending``); a pending
    entry replaces the stored one, None deletes."""
    pending_iter = iter(pending)
    head = next(pending_iter, None)
    for key, value in stored:
        while head is not None and (head[0] > key if descending else head[0] < key):
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
        self._stored: dict[bytes, Optional[bytes]] = {}   # RocksDB values read this batch

    def _rebind(self, db: RocksDB) -> None:
        """Point at a new RocksDB handle (after the local copy was dropped)."""
        self._db = db

    def get(self, key: bytes) -> Optional[bytes]:
        self._metrics.gets += 1
        if key in self._pending:
            return self._pending[key]
        if key in self._stored:
            return self._stored[key]
        value = self._stored[key] = self._db.get(key)
        return value

    def get_many(self, keys: Sequence[bytes]) -> list[Optional[bytes]]:
        """Pending or already read values, the rest with one RocksDB multi-get."""
        self._metrics.gets += len(keys)
        return self._lookup(keys, self._pending)

    def _lookup(self, keys: Sequence[bytes], pending: dict) -> list[Optional[bytes]]:
        """Values from ``pending``, else as stored in RocksDB (one multi-get for the
        keys not read yet this batch)."""
        stored = self._stored
        missing = [k for k in keys if k not in pending and k not in stored]
        if missing:
            stored.update(zip(missing, self._db.get_many(missing)))
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
                 timestamp: Optional[int] = None,
                 timestamps: Optional[Sequence[Optional[int]]] = None) -> None:
        """Buffer many writes; the changelog records get ``timestamp`` (one for all) or
        ``timestamps`` (one per item, ``None`` = now)."""
        items = items if isinstance(items, (list, tuple)) else list(items)
        if timestamps is not None:
            if timestamp is not None:
                raise ValueError("put_many() takes timestamp or timestamps, not both")
            if len(timestamps) != len(items):
                raise ValueError(f"put_many() got {len(timestamps)} timestamps for {len(items)} items")
        self._metrics.puts += len(items)
        self._pending.update(items)
        if timestamps is not None:
            for (key, _), ts in zip(items, timestamps):
                if ts is not None:
                    self._stamps[key] = ts
                else:
                    self._stamps.pop(key, None)
        elif timestamp is not None:
            self._stamps.update((key, timestamp) for key, _ in items)
        elif self._stamps:
            for key, _ in items:
                self._stamps.pop(key, None)

    def put_new(self, items: Sequence[tuple[bytes, bytes]], timestamps: Sequence[int]) -> None:
        """:meth:`put_many` of keys the caller knows RocksDB does not hold (new sequence
        numbers): the commit's undo record then needs no read of them."""
        self.put_many(items, timestamps=timestamps)
        self._stored.update((key, None) for key, _ in items)

    def delete(self, key: bytes) -> None:
        self.put(key, None)

    def _scan(self, bounds: Bounds) -> Iterator[KeyValue]:
        pending = sorted(item for item in self._pending.items() if within(item[0], bounds))
        return _merge(self._db.scan(bounds), pending)

    def _scan_reverse(self, bounds: Bounds) -> Iterator[KeyValue]:
        pending = sorted((item for item in self._pending.items() if within(item[0], bounds)),
                         reverse=True)
        return _merge(self._db.scan_reverse(bounds), pending, descending=True)

    def approximate_num_entries(self) -> int:
        """RocksDB's estimate plus the pending puts (an upper bound for them)."""
        return self._db.approximate_num_entries() + sum(v is not None for v in self._pending.values())

    def _take_changes(self) -> Changes:
        """Hand the buffered writes to the commit and start an empty buffer.

        A key absent before the batch and deleted at its end is no change: it gets no
        changelog record and no RocksDB tombstone (a buffer whose entries come and go
        within one batch would otherwise leave a trail of tombstones that later scans
        walk over)."""
        keys = list(self._pending)
        values = list(self._pending.values())
        prior = self._lookup(keys, {})
        if None in values:
            kept = [i for i, (value, before) in enumerate(zip(values, prior))
                    if value is not None or before is not None]
            if len(kept) < len(keys):
                keys = [keys[i] for i in kept]
                values = [values[i] for i in kept]
                prior = [prior[i] for i in kept]
        changes = Changes(keys, values, [self._stamps.get(k) for k in keys], prior)
        self._discard_changes()
        return changes

    def _discard_changes(self) -> None:
        self._pending = {}
        self._stamps = {}
        self._stored = {}
