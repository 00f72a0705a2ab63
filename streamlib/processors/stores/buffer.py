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
        self._min_time: Optional[float] = None   # unknown until looked up

    def put(self, time: int, key: bytes, timestamp: int, value: bytes) -> None:
        self.store.put(_TIME.pack(time) + key, _TIME.pack(timestamp) + value, timestamp)
        if self._min_time is not None and time < self._min_time:
            self._min_time = time

    def min_time(self) -> float:
        if self._min_time is None:
            first = next(iter(self.store.all()), None)
            self._min_time = float("inf") if first is None else _TIME.unpack_from(first[0])[0]
        return self._min_time

    def evict(self, up_to: int) -> Iterator[tuple[bytes, int, bytes]]:
        """``(key, timestamp, value)`` of entries with time ≤ ``up_to``, removed as taken."""
        if self.min_time() > up_to:
            return
        for entry_key, entry in list(self.store._scan((None, _TIME.pack(up_to + 1)))):
            self.store.put(entry_key, None)
            yield entry_key[_TIME.size:], _TIME.unpack_from(entry)[0], entry[_TIME.size:]
        self._min_time = None

    def write_back(self) -> None:
        """The buffer writes straight into the byte store: nothing is held back."""
