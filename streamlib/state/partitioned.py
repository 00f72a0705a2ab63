"""One query view over a store's copies in every task (one per partition)."""
from __future__ import annotations

import heapq
import os
from typing import Callable, Iterator, Optional, Sequence

from streamlib.state.bounds import Bounds
from streamlib.state.readonly import ReadOnlyKeyValueStore, open_read_only_store
from streamlib.state.reads import KeyValue, KeyValueReads


class PartitionedReadOnlyStore(KeyValueReads):
    """Reads of a store whose keys are spread over the tasks' RocksDB copies.

    ``paths()`` lists the copies' directories; each query first catches up with what
    the tasks committed (whole batches only), opening copies that appeared since.
    """

    def __init__(self, paths: Callable[[], list[str]]):
        self._paths = paths
        self._views: dict[str, ReadOnlyKeyValueStore] = {}

    def _current(self) -> list[ReadOnlyKeyValueStore]:
        for path in self._paths():
            if path in self._views or not os.path.isdir(path):
                continue
            try:
                self._views[path] = open_read_only_store(path)
            except FileNotFoundError:
                continue
        for view in self._views.values():
            view.refresh()
        return [self._views[p] for p in sorted(self._views)]

    def get_many(self, keys: Sequence[bytes]) -> list[Optional[bytes]]:
        found: list[Optional[bytes]] = [None] * len(keys)
        for view in self._current():
            for i, value in enumerate(view.get_many(keys)):
                if value is not None:
                    found[i] = value
        return found

    def _scan(self, bounds: Bounds) -> Iterator[KeyValue]:
        return heapq.merge(*(view._scan(bounds) for view in self._current()), key=lambda kv: kv[0])

    def approximate_num_entries(self) -> int:
        return sum(view.approximate_num_entries() for view in self._current())

    def close(self) -> None:
        for view in self._views.values():
            view.close()
        self._views.clear()
