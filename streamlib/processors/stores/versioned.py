"""A versioned key-value store: each key's history of values for a retention period
(Kafka's ``VersionedKeyValueStore``, KIP-889), as the stream–table join with a grace
period reads it.

A version is valid from its timestamp until the next newer version's; a tombstone
(value ``None``) is a version too. Versions live in the task's ordinary byte store in
the window-store layout (:mod:`.layout`, one time per slot: the version's timestamp),
so change-logging, undo of a re-run batch and restore work unchanged. The store keeps
its observed stream time (the largest timestamp it was told about) under a meta key of
the same byte store, so it is restored with the versions.

History is kept for ``history_ms`` behind the observed stream time (the largest
timestamp *put*: table records only, as Kafka's store): older puts are refused, and a
lookup older than that sees only the key's latest version, when it began by then (the
latest version never expires; Kafka's rule), else ``None``. :meth:`expire` deletes
versions no lookup can reach any more.
"""
from __future__ import annotations

import struct
from bisect import bisect_right
from typing import Any, Optional

from ...serdes import Serde
from .layout import Layout
from .timed import TimedStore

VERSIONS = Layout(b"v", 1)
#: byte-store key of (observed stream time, time up to which history is expired)
_META = b"m"
_META_LAYOUT = struct.Struct(">qq")
_NONE = -(1 << 63)


class OptionalValueSerde:
    """A value serde that can store ``None`` (a tombstone version): one marker byte."""

    def __init__(self, inner: Serde):
        self.inner = inner

    def serialize(self, value: Any) -> bytes:
        return b"\x00" if value is None else b"\x01" + self.inner.serialize(value)

    def deserialize(self, data: bytes) -> Any:
        return None if data[:1] == b"\x00" else self.inner.deserialize(bytes(data[1:]))


class VersionedKeyValueStore(TimedStore):
    """``put(key, value, timestamp)`` and ``get_as_of(key, timestamp)``.

    Examples
    --------
    >>> import tempfile
    >>> from streamlib.serdes import Serdes
    >>> from streamlib.state import StoreSpec, open_task_stores
    >>> stores = open_task_stores(tempfile.mkdtemp(), [StoreSpec("v", logging=False)])
    >>> stores.begin(0)
    >>> v = VersionedKeyValueStore("v", stores["v"], Serdes.string(), Serdes.string(), history_ms=10)
    >>> v.put("A", "a", 2); v.put("A", "a2", 7); v.put("A", "a1", 5)   # the last one arrives late
    True
    True
    True
    >>> v.get_as_of("A", 1), v.get_as_of("A", 6), v.get_as_of("A", 100)
    (None, ('a1', 5), ('a2', 7))
    >>> v.put("A", None, 9); v.get_as_of("A", 9)     # a tombstone is a version
    True
    >>> v.put("B", "b", 3); v.put("C", "c", 30); v.get_as_of("B", 4), v.get_as_of("A", 6)
    True
    True
    (('b', 3), None)
    >>> v.write_back(); stores.commit(); stores.close()
    """

    def __init__(self, name: str, store: Any, key_serde: Serde, value_serde: Serde, history_ms: int):
        super().__init__(name, store, key_serde, OptionalValueSerde(value_serde), VERSIONS)
        self.history_ms = history_ms
        raw = store.get(_META)
        observed, expired_to = (-1, _NONE) if raw is None else _META_LAYOUT.unpack(raw)
        #: the largest timestamp put or observed (never goes back)
        self.observed_time = observed
        self._history_expired_to = expired_to
        self._meta = (observed, expired_to)

    def _reset(self) -> None:
        super()._reset()
        #: key bytes -> (version timestamps, ``(value, valid_from)`` of each), oldest
        #: first: a key's history as this batch sees it, read once with one scan and kept
        #: current by :meth:`_set`, so a lookup is a bisection, not a seek into RocksDB
        self._histories: dict[bytes, tuple[list[int], list[tuple[Any, int]]]] = {}

    def _history(self, kb: bytes) -> tuple[list[int], list[tuple[Any, int]]]:
        found = self._histories.get(kb)
        if found is None:
            entries = self._key_entries(kb)
            found = self._histories[kb] = ([slot[0] for slot, _, _ in entries],
                                           [(value, ts) for _, value, ts in entries])
        return found

    def _set(self, kb: bytes, slot: tuple, dk: bytes, entry: Any, stamp: Optional[int]) -> None:
        super()._set(kb, slot, dk, entry, stamp)
        history = self._histories.get(kb)
        if history is None:
            return
        times, versions = history
        at = bisect_right(times, slot[0])
        if at and times[at - 1] == slot[0]:
            if entry is None:
                del times[at - 1], versions[at - 1]
            else:
                versions[at - 1] = entry
        elif entry is not None:
            times.insert(at, slot[0])
            versions.insert(at, entry)

    # -- time ----------------------------------------------------------------------------
    def observe(self, timestamp: int) -> None:
        """Move the observed stream time forward to ``timestamp`` (never back)."""
        if timestamp > self.observed_time:
            self.observed_time = timestamp

    @property
    def history_start(self) -> int:
        """The oldest time lookups can still see: observed stream time − history."""
        return self.observed_time - self.history_ms

    # -- reads and writes ----------------------------------------------------------------
    def put(self, key: Any, value: Any, timestamp: int) -> bool:
        """Add the version ``value`` (``None``: a tombstone) valid from ``timestamp``,
        replacing one with the same timestamp; an out-of-order put goes into the history.
        Returns False (and changes nothing) for a timestamp older than the history."""
        self.observe(timestamp)
        if timestamp < self.history_start:
            return False
        kb = self.key_serde.serialize(key)
        slot = (timestamp,)
        # (None, ts) is a tombstone *version*; a bare None entry would delete the slot
        self._set(kb, slot, self.layout.data_key(kb, slot), (value, timestamp), timestamp)
        return True

    def get_as_of(self, key: Any, timestamp: int) -> Optional[tuple[Any, int]]:
        """``(value, valid_from)`` of the version valid at ``timestamp``, or None when there
        is none, it is a tombstone, or ``timestamp`` is older than the history and the
        key's latest version began after it (Kafka's ``RocksDBVersionedStore.get``: the
        latest version never expires; an older one is not looked for there)."""
        times, versions = self._history(self.key_serde.serialize(key))
        if not times:
            return None
        if timestamp < self.history_start:
            value, valid_from = versions[-1]
            return None if valid_from > timestamp or value is None else (value, valid_from)
        at = bisect_right(times, timestamp)
        if at == 0:
            return None
        value, valid_from = versions[at - 1]
        return None if value is None else (value, valid_from)

    def forgot(self, key: Any, timestamp: int) -> bool:
        """Whether the version of ``key`` valid at ``timestamp`` has expired: the time is
        older than the history and the key's latest version began after it, so
        :meth:`get_as_of` cannot say what the table held then (it answers None)."""
        if timestamp >= self.history_start:
            return False
        times, _ = self._history(self.key_serde.serialize(key))
        return bool(times) and times[-1] > timestamp

    def next_version_after(self, key: Any, timestamp: int) -> Optional[int]:
        """The timestamp of the key's oldest version newer than ``timestamp``, or None."""
        times, _ = self._history(self.key_serde.serialize(key))
        at = bisect_right(times, timestamp)
        return times[at] if at < len(times) else None

    def versions(self, key: Any) -> list[tuple[Any, int]]:
        """Every stored ``(value, valid_from)`` of ``key``, oldest first (tombstones as None)."""
        return [(value, ts) for _, value, ts in self._key_entries(self.key_serde.serialize(key))]

    # -- expiry --------------------------------------------------------------------------
    def expire(self) -> None:
        """Delete the versions that ended at or before the history start (the next newer
        version began by then), and a key's oldest remaining version when it is a
        tombstone valid since before then. Only keys with a version that began since the
        last expiry are looked at."""
        horizon = self.history_start
        done = self._history_expired_to
        if horizon <= done:
            return
        keys = {kb for kb, _, _, _ in self._time_entries(None if done == _NONE else done, horizon)}
        for kb in keys:
            old = self._key_entries(kb, None, horizon)
            for slot, _, _ in old[:-1]:
                self._remove(kb, slot, None)
            if old and old[-1][1] is None:
                self._remove(kb, old[-1][0], None)
        self._history_expired_to = horizon

    def write_back(self) -> None:
        """The batch's versions, then the store's time if it moved."""
        super().write_back()
        meta = (self.observed_time, self._history_expired_to)
        if meta != self._meta:
            self.store.put(_META, _META_LAYOUT.pack(*meta))
            self._meta = meta
