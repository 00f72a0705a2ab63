"""Session stores: one aggregate per (key, session), as processors and queries see them."""
from __future__ import annotations

from typing import Any, Optional

from ...serdes import Serde
from ...windows import Window, Windowed
from .base import WindowedStoreView
from .layout import SESSIONS, Slot
from .timed import TimedStore


def _window(slot: Slot) -> Window:
    end, start = slot
    return Window(start, end)


class SessionStore(TimedStore):
    """The processor-side session store (Kafka's ``SessionStore``), aggregates kept with
    their timestamp. Sessions are ordered by key, end, start, as in Kafka.

    Examples
    --------
    >>> import tempfile
    >>> from streamlib.serdes import Serdes
    >>> from streamlib.state import StoreSpec, open_task_stores
    >>> from streamlib.windows import Window
    >>> stores = open_task_stores(tempfile.mkdtemp(), [StoreSpec("s", logging=False)])
    >>> stores.begin(0)
    >>> s = SessionStore("s", stores["s"], Serdes.string(), Serdes.long())
    >>> s.put("a", Window(10, 20), 2, timestamp=20)
    >>> s.find_sessions("a", earliest_end=15, latest_start=30)
    [(Window(10, 20), 2, 20)]
    >>> s.write_back(); stores.commit(); stores.close()
    """

    def __init__(self, name: str, store: Any, key_serde: Serde, value_serde: Serde):
        super().__init__(name, store, key_serde, value_serde, SESSIONS)

    def find_sessions(self, key: Any, earliest_end: int,
                      latest_start: int) -> list[tuple[Window, Any, int]]:
        """``(Window, agg, timestamp)`` of the key's sessions with end ``>= earliest_end``
        and start ``<= latest_start``, by end then start (Kafka's ``findSessions``)."""
        kb = self.key_serde.serialize(key)
        return [(_window(slot), agg, ts) for slot, agg, ts in self._key_entries(kb, earliest_end)
                if slot[1] <= latest_start]

    def fetch_sessions(self, key: Any) -> list[tuple[Window, Any, int]]:
        """All the key's sessions, by end then start."""
        kb = self.key_serde.serialize(key)
        return [(_window(slot), agg, ts) for slot, agg, ts in self._key_entries(kb)]

    def get(self, key: Any, window: Window) -> Optional[tuple[Any, int]]:
        """``(agg, timestamp)`` of exactly this session, or None (Kafka's ``fetchSession``)."""
        return self._get(self.key_serde.serialize(key), (window.end, window.start))

    def put(self, key: Any, window: Window, agg: Any, timestamp: int) -> None:
        """Set the session's aggregate; ``agg`` None removes the session."""
        self._put(self.key_serde.serialize(key), (window.end, window.start), agg, timestamp)

    def remove(self, key: Any, window: Window, timestamp: Optional[int] = None) -> None:
        """Remove the session (``timestamp``: the tombstone's changelog timestamp, None = now)."""
        self._remove(self.key_serde.serialize(key), (window.end, window.start), timestamp)

    def fetch_all(self, earliest_end: Optional[int] = None,
                  latest_end: Optional[int] = None) -> list[tuple[Windowed, Any, int]]:
        """``(Windowed, agg, timestamp)`` of all sessions with end in
        ``[earliest_end, latest_end]``, by end, key bytes, start."""
        return [(Windowed(self.key_serde.deserialize(kb), _window(slot)), agg, ts)
                for kb, slot, agg, ts in self._time_entries(earliest_end, latest_end)]


class SessionStoreView(WindowedStoreView):
    """Read-only, typed view of a session store for queries (``app.store(name)``,
    ``driver.get_session_store(name)``), as Kafka's ``ReadOnlySessionStore``."""

    layout = SESSIONS

    def _windowed(self, kb: bytes, slot: Slot) -> Windowed:
        return Windowed(self._key_serde.deserialize(kb), _window(slot))

    def fetch_sessions(self, key: Any) -> list[tuple[Windowed, Any]]:
        """``(Windowed, value)`` of the key's sessions, by end then start."""
        kb = self._key_bytes(key)
        return [(self._windowed(kb, slot), self._value(raw))
                for _, slot, raw in SESSIONS.scan_key(self._store, kb)]

    def fetch(self, key: Any) -> list[tuple[Windowed, Any]]:
        """Same as :meth:`fetch_sessions` (Kafka's ``ReadOnlySessionStore.fetch(key)``)."""
        return self.fetch_sessions(key)

    def find_sessions(self, key: Any, earliest_end: int, latest_start: int) -> list[tuple[Windowed, Any]]:
        """The key's sessions with end ``>= earliest_end`` and start ``<= latest_start``."""
        kb = self._key_bytes(key)
        return [(self._windowed(kb, slot), self._value(raw))
                for _, slot, raw in SESSIONS.scan_key(self._store, kb, earliest_end)
                if slot[1] <= latest_start]

    def all(self) -> list[tuple[Windowed, Any]]:
        """Every session, by key bytes, end, start."""
        return [(self._windowed(kb, slot), self._value(raw))
                for kb, slot, raw in SESSIONS.all_entries(self._store)]

    def approximate_num_entries(self) -> int:
        """About the number of sessions (each session is a data and an index entry)."""
        return self._store.approximate_num_entries() // 2
