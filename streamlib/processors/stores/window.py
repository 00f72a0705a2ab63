"""Window stores: one value per (key, window start), as processors and queries see them."""
from __future__ import annotations

from typing import Any, Optional

from ...serdes import Serde
from ...windows import Window, Windowed
from .base import WindowedStoreView
from .layout import WINDOWS
from .timed import TimedStore


class TimestampedWindowStore(TimedStore):
    """The processor-side window store (Kafka's ``TimestampedWindowStore``).

    Values are kept with their timestamp; windows are ``[start, start + window_size_ms)``.

    Examples
    --------
    >>> import tempfile
    >>> from streamlib.serdes import Serdes
    >>> from streamlib.state import StoreSpec, open_task_stores
    >>> stores = open_task_stores(tempfile.mkdtemp(), [StoreSpec("w", logging=False)])
    >>> stores.begin(0)
    >>> w = TimestampedWindowStore("w", stores["w"], Serdes.string(), Serdes.long(), 100)
    >>> w.put("a", 0, 1, timestamp=5); w.put("a", 100, 2, timestamp=150)
    >>> w.fetch("a", 0, 99)
    [(0, 1, 5)]
    >>> w.write_back(); stores.commit(); stores.close()
    """

    def __init__(self, name: str, store: Any, key_serde: Serde, value_serde: Serde,
                 window_size_ms: int):
        super().__init__(name, store, key_serde, value_serde, WINDOWS)
        self.window_size_ms = window_size_ms

    def get(self, key: Any, window_start: int) -> Optional[tuple[Any, int]]:
        """``(value, timestamp)`` of the key's window starting at ``window_start``, or None."""
        return self._get(self.key_serde.serialize(key), (window_start,))

    def put(self, key: Any, window_start: int, value: Any, timestamp: int) -> None:
        """Set the key's window starting at ``window_start``; ``value`` None deletes it."""
        self._put(self.key_serde.serialize(key), (window_start,), value, timestamp)

    def get_many_by_bytes(self, kbs: list[bytes], starts: list[int]) -> list[Optional[tuple[Any, int]]]:
        """``(value, timestamp)`` or None per (key bytes, window start): one multi-get
        for the windows not read in this batch yet."""
        return [entry for _, entry in self._get_many(kbs, [(start,) for start in starts])]

    def put_by_bytes(self, kb: bytes, window_start: int, value: Any, timestamp: int) -> None:
        """:meth:`put` for a key already serialized."""
        self._put(kb, (window_start,), value, timestamp)

    def fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any, int]]:
        """``(window_start, value, timestamp)`` of the key's windows with start in
        ``[time_from, time_to]``, by start."""
        kb = self.key_serde.serialize(key)
        return [(slot[0], value, ts) for slot, value, ts in self._key_entries(kb, time_from, time_to)]

    def fetch_all(self, time_from: Optional[int] = None,
                  time_to: Optional[int] = None) -> list[tuple[Windowed, Any, int]]:
        """``(Windowed, value, timestamp)`` of all windows with start in
        ``[time_from, time_to]`` (None: open), by start then key bytes."""
        return [(self._windowed(kb, slot[0]), value, ts)
                for kb, slot, value, ts in self._time_entries(time_from, time_to)]

    def _windowed(self, kb: bytes, start: int) -> Windowed:
        return Windowed(self.key_serde.deserialize(kb), Window(start, start + self.window_size_ms))


class WindowStoreView(WindowedStoreView):
    """Read-only, typed view of a window store for queries (``app.store(name)``,
    ``driver.get_window_store(name)``): plain values, as in Kafka's ``ReadOnlyWindowStore``."""

    layout = WINDOWS

    def __init__(self, name: str, store: Any, key_serde: Serde, value_serde: Serde,
                 window_size_ms: int):
        super().__init__(name, store, key_serde, value_serde)
        self.window_size_ms = window_size_ms

    def _windowed(self, kb: bytes, slot: tuple[int, ...]) -> Windowed:
        return Windowed(self._key_serde.deserialize(kb), Window(slot[0], slot[0] + self.window_size_ms))

    def fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        """``(window_start, value)`` of the key's windows whose start is in
        ``[time_from, time_to]``, by start."""
        kb = self._key_bytes(key)
        return [(slot[0], self._value(raw))
                for _, slot, raw in self.layout.scan_key(self._store, kb, time_from, time_to)]

    def fetch_all(self, time_from: Optional[int] = None,
                  time_to: Optional[int] = None) -> list[tuple[Windowed, Any]]:
        """``(Windowed, value)`` of all windows with start in ``[time_from, time_to]``,
        by start then key bytes."""
        return [(self._windowed(kb, slot), self._value(raw))
                for kb, slot, raw in self.layout.time_entries(self._store, time_from, time_to)]

    def all(self) -> list[tuple[Windowed, Any]]:
        """Every window, by key bytes then start."""
        return [(self._windowed(kb, slot), self._value(raw))
                for kb, slot, raw in self.layout.all_entries(self._store)]

    def approximate_num_entries(self) -> int:
        """About the number of windows (each window is a data and an index entry)."""
        return self._store.approximate_num_entries() // 2
