"""A time-ordered buffer in a task's byte store: what ``suppress`` holds back."""
from __future__ import annotations

import struct
from typing import Iterator, Optional

from ...state.kv import KeyValueStore

_TIME = struct.Struct(">q")
#: prefix of the key → time index of a keyed buffer: sorts after every (time, key) entry
_INDEX = b"\xff"


class TimeOrderedBuffer:
    """Records keyed by (time, key bytes) in a task's byte store: put replaces a key's
    entry, :meth:`evict` takes every entry up to a time, oldest first.

    A *keyed* buffer (``keyed = True``, set by its processor) also indexes each key's
    time, so that a key's entry keeps the time it was first buffered at (Kafka's
    time-limit suppression) and :meth:`time_of` finds it."""

    def __init__(self, name: str, store: KeyValueStore):
        self.name = name
        self.store = store
        self.keyed = False
        #: no entry has a smaller time (None: not looked up yet). Scans start there, not
        #: at the store's beginning, over the deletes of earlier evictions.
        self._floor: Optional[float] = None

    def put(self, time: int, key: bytes, timestamp: int, value: bytes) -> None:
        self.store.put(_TIME.pack(time) + key, _TIME.pack(timestamp) + value, timestamp)
        if self._floor is not None and time < self._floor:
            self._floor = time

    def put_many(self, entries: list[tuple[int, bytes, int, bytes]]) -> None:
        """:meth:`put` of each ``(time, key, timestamp, value)``."""
        pack = _TIME.pack
        self.store.put_many([(pack(time) + key, pack(timestamp) + value) for time, key, timestamp, value in entries],
                            timestamps=[timestamp for _, _, timestamp, _ in entries])
        if self._floor is not None and entries:
            self._floor = min(self._floor, min(time for time, _, _, _ in entries))

    def replace(self, time: int, key: bytes, timestamp: int, value: bytes) -> Optional[bytes]:
        """:meth:`put`, returning the value it replaced (None: the key had no entry at
        ``time``); a keyed buffer indexes a new key's time."""
        previous = self.store.get(_TIME.pack(time) + key)
        self.put(time, key, timestamp, value)
        if self.keyed and previous is None:
            self.store.put(_INDEX + key, _TIME.pack(time), timestamp)
        return None if previous is None else bytes(previous[_TIME.size:])

    def get(self, time: int, key: bytes) -> Optional[bytes]:
        """The value of ``key``'s entry at ``time``, or None."""
        raw = self.store.get(_TIME.pack(time) + key)
        return None if raw is None else bytes(raw[_TIME.size:])

    def time_of(self, key: bytes) -> Optional[int]:
        """The time a keyed buffer holds ``key`` at, or None."""
        raw = self.store.get(_INDEX + key)
        return None if raw is None else _TIME.unpack(raw)[0]

    def _take(self, entry_key: bytes, entry: bytes) -> tuple[bytes, int, bytes]:
        self.store.put(entry_key, None)
        key = entry_key[_TIME.size:]
        if self.keyed:
            self.store.put(_INDEX + key, None)
        return key, _TIME.unpack_from(entry)[0], entry[_TIME.size:]

    def _lower(self) -> Optional[bytes]:
        """Where scans start: the floor, found once."""
        if self._floor is None:
            first = next(iter(self.store.all()), None)
            self._floor = (float("inf") if first is None or first[0][:1] == _INDEX
                           else _TIME.unpack_from(first[0])[0])
        # (times are never negative, and a negative one would not sort as a number)
        return _TIME.pack(int(self._floor)) if 0 < self._floor < float("inf") else None

    def evict(self, up_to: int) -> Iterator[tuple[bytes, int, bytes]]:
        """``(key, timestamp, value)`` of entries with time ≤ ``up_to``, removed as taken."""
        lower = self._lower()
        if self._floor > up_to:
            return
        for entry_key, entry in list(self.store._scan((lower, _TIME.pack(up_to + 1)))):
            yield self._take(entry_key, entry)
        self._floor = up_to + 1

    def evict_oldest(self) -> Optional[tuple[bytes, int, bytes]]:
        """``(key, timestamp, value)`` of the entry with the smallest (time, key), removed;
        None when the buffer is empty (a full buffer emitting early)."""
        lower = self._lower()
        if self._floor == float("inf"):
            return None
        for entry_key, entry in self.store._scan((lower, _INDEX)):
            self._floor = _TIME.unpack_from(entry_key)[0]
            return self._take(entry_key, entry)
        self._floor = float("inf")
        return None

    def write_back(self) -> None:
        """The buffer writes straight into the byte store: nothing is held back."""
