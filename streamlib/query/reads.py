"""Byte-level reads of one store's replica, each call at one published version."""
from __future__ import annotations

import heapq
from bisect import bisect_left
from itertools import islice
from typing import Callable, Iterator, Optional, Sequence

from streamlib.query.replica import StoreReplicas, Version
from streamlib.state.bounds import Bounds
from streamlib.state.reads import KeyValue, KeyValueReads
from streamlib.state.rocksdb import RocksDB
from streamlib.topics.partitioner import default_partitioner

#: entries read from a partition at a time: the first page is small (a probe or a
#: short page of an HTTP scan reads little), later ones grow to the largest
_FIRST_PAGE = 16
_PAGE = 1024
_ABSENT = object()


class NotYetQueryable(RuntimeError):
    """The replicas have published no version yet (Kafka Streams'
    ``InvalidStateStoreException`` while a store is restoring)."""


class ReplicaReads(KeyValueReads):
    """get/range/all/prefix_scan over a store's replica partitions.

    Every call pins the version published when it starts and reads exactly that
    version in every partition, while newer versions are being applied.
    ``prepare()`` runs before each call (e.g. to catch up when the application is idle).
    ``probe``: a point lookup reads the partition its key's bytes map to first (see
    :meth:`get`); ``False`` when a custom partitioner writes the store's input.
    """

    def __init__(self, replicas: StoreReplicas, store: str, prepare: Callable[[], None] = lambda: None,
                 probe: bool = True):
        self._replicas = replicas
        self._store = store
        self._prepare = prepare
        self._probe = probe

    def _pin(self) -> tuple[Version, list[tuple[int, RocksDB]]]:
        self._prepare()
        version, dbs = self._replicas.pin(self._store)
        if version is None:
            raise NotYetQueryable(f"store {self._store!r} is not queryable yet: its replica "
                                  "has not caught up with the changelog")
        return version, dbs

    def get(self, key: bytes) -> Optional[bytes]:
        """A point lookup: first in the partition the key's bytes map to with the default
        partitioner (Kafka Streams' ``queryMetadataForKey``); only when it is not there,
        in the other partitions (a source topic its producers partitioned otherwise, a
        store key serialized unlike its topic's key). A key lives in one partition, so
        this is what reading every partition answers, in one read when the key is found
        where the partitioner puts it."""
        version, dbs = self._pin()
        n = len(dbs)
        if self._probe and n > 1 and dbs[-1][0] == n - 1:   # partitions 0..n-1
            p = default_partitioner(key, n)
            value = self._get_from(version, dbs[p:p + 1], [key])[0]
            if value is not None:
                return value
            dbs = dbs[:p] + dbs[p + 1:]
        return self._get_from(version, dbs, [key])[0]

    def get_many(self, keys: Sequence[bytes]) -> list[Optional[bytes]]:
        version, dbs = self._pin()
        return self._get_from(version, dbs, keys)

    def _get_from(self, version: Version, dbs: list[tuple[int, RocksDB]],
                  keys: Sequence[bytes]) -> list[Optional[bytes]]:
        """The keys' values at ``version`` in these partitions (the last one found wins)."""
        found: list[Optional[bytes]] = [None] * len(keys)
        for partition, db in dbs:
            values = db.get_many(keys)
            # Read first, then look for later versions' undo records (see replica.py).
            fixes = version.corrections((self._store, partition))
            for i, value in enumerate(values):
                for undo in fixes:
                    old = undo.get(keys[i], _ABSENT)
                    if old is not _ABSENT:
                        value = old
                        break
                if value is not None:
                    found[i] = value
        return found

    def pin_version(self) -> Version:
        """The version published now (for a scan continued later at the same batch)."""
        return self._pin()[0]

    def _scan(self, bounds: Bounds) -> Iterator[KeyValue]:
        version, dbs = self._pin()
        return self._scan_version(version, dbs, bounds)

    def scan_at(self, version: Version, bounds: Bounds) -> Iterator[KeyValue]:
        """Entries within ``bounds`` as of ``version``, an earlier published version
        (its undo records correct what newer batches wrote since)."""
        return self._scan_version(version, self._replicas.pin(self._store)[1], bounds)

    def _scan_version(self, version: Version, dbs: list[tuple[int, RocksDB]],
                      bounds: Bounds) -> Iterator[KeyValue]:
        scans = [self._scan_partition(version, partition, db, bounds) for partition, db in dbs]
        if len(scans) == 1:
            return scans[0]
        return heapq.merge(*scans, key=lambda kv: kv[0])

    def _scan_partition(self, version: Version, partition: int, db: RocksDB,
                        bounds: Bounds) -> Iterator[KeyValue]:
        lower, upper = bounds
        part = (self._store, partition)
        size = _FIRST_PAGE
        while True:
            page = list(islice(db.scan((lower, upper), size), size))
            full = len(page) == size
            covered = (lower, page[-1][0] + b"\x00" if full else upper)
            fixes = version.sorted_corrections(part)
            if fixes:
                page = _corrected(page, fixes, covered)
            yield from page
            if not full:
                return
            lower = covered[1]
            size = min(2 * size, _PAGE)

    def approximate_num_entries(self) -> int:
        _, dbs = self._pin()
        return sum(db.approximate_num_entries() for _, db in dbs)


def _corrected(page: list[KeyValue], fixes: list[tuple[list[bytes], dict]], covered: Bounds) -> list[KeyValue]:
    """``page`` (keys within ``covered``, as read now) at the pinned version, ``fixes``
    the undo records of the later versions with their keys in order."""
    lower, upper = covered
    older: dict[bytes, Optional[bytes]] = {}
    for keys, undo in fixes:
        start = 0 if lower is None else bisect_left(keys, lower)
        stop = len(keys) if upper is None else bisect_left(keys, upper)
        for key in keys[start:stop]:
            if key not in older:
                older[key] = undo[key]
    if not older:
        return page
    entries = dict(page)
    entries.update(older)
    return sorted((k, v) for k, v in entries.items() if v is not None)
