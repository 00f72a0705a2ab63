"""The read API common to the task-side store and the read-only query view."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Iterator, Optional, Sequence

from streamlib.state.bounds import Bounds, prefix_bounds, range_bounds

KeyValue = tuple[bytes, bytes]


class KeyValueReads(ABC):
    """get/range/all/prefix_scan over bytes, built on two primitives a store provides."""

    @abstractmethod
    def get_many(self, keys: Sequence[bytes]) -> list[Optional[bytes]]: ...

    @abstractmethod
    def _scan(self, bounds: Bounds) -> Iterator[KeyValue]:
        """Entries within ``bounds`` in key order."""

    @abstractmethod
    def approximate_num_entries(self) -> int: ...

    def _scan_reverse(self, bounds: Bounds) -> Iterator[KeyValue]:
        """Entries within ``bounds`` in descending key order. This fallback reads the
        range forwards; stores over RocksDB seek backwards instead."""
        return reversed(list(self._scan(bounds)))

    def between_reversed(self, lower: Optional[bytes], upper: Optional[bytes]) -> Iterator[KeyValue]:
        """Entries with ``lower <= key < upper`` in *descending* key order."""
        return self._scan_reverse((lower, upper))

    def get(self, key: bytes) -> Optional[bytes]:
        return self.get_many([key])[0]

    def range(self, lo: Optional[bytes], hi: Optional[bytes]) -> Iterator[KeyValue]:
        """Entries with ``lo <= key <= hi`` in key order; a ``None`` bound is open."""
        return self._scan(range_bounds(lo, hi))

    def all(self) -> Iterator[KeyValue]:
        return self._scan((None, None))

    def between(self, lower: Optional[bytes], upper: Optional[bytes]) -> Iterator[KeyValue]:
        """Entries with ``lower <= key < upper`` (upper exclusive) in key order."""
        return self._scan((lower, upper))

    def prefix_scan(self, prefix: bytes) -> Iterator[KeyValue]:
        return self._scan(prefix_bounds(prefix))
