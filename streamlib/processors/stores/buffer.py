"""A time-ordered buffer in a task's byte store: what ``suppress`` holds back."""
from __future__ import annotations

import struct
from typing import Iterator, Optional

from ...state.kv import KeyValueStore

_TIME = struct.Struct(">q")


class TimeOrderedBuffer:
    """Records keyed by (time, key bytes) in a task's byte store: put replaces a key's
    entry, :meth:`evict` takes every entry up to a time, oldest first."""

    def __init__(self, name: str, store: KeyValueStore):
        self.name = name
        self.store = store
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

    def evict(self, up_to: int) -> Iterator[tuple[bytes, int, bytes]]:
        """``(key, timestamp, value)`` of entries with time ≤ ``up_to``, removed as taken."""
        if self._floor is None:
            first = next(iter(self.store.all()), None)
            self._floor = float("inf") if first is None else _TIME.unpack_from(first[0])[0]
        if self._floor > up_to:
            return
        # (times are never negative, and a negative one would not sort as a number)
        lower = _TIME.pack(int(self._floor)) if self._floor > 0 else None
        for entry_key, entry in list(self.store._scan((lower, _TIME.pack(up_to + 1)))):
            self.store.put(entry_key, None)
            yield entry_key[_TIME.size:], _TIME.unpack_from(entry)[0], entry[_TIME.size:]
        self._floor = up_to + 1

    def write_back(self) -> None:
        """The buffer writes straight into the byte store: nothing is held back."""
