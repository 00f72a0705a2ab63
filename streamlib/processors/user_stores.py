"""The stores a user processor gets from ``context.get_state_store(name)``: Kafka's
``KeyValueStore``, ``WindowStore``, ``SessionStore`` and ``VersionedKeyValueStore``
interfaces, in snake_case, over the task's typed stores (the same ones DSL operators
use, so a store is change-logged, restored, rolled back with a re-run batch and
queried exactly like theirs).

Writes carry the timestamp of the record being processed (in a punctuator: the task's
stream time) into the changelog, as Kafka's timestamped stores do.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, NamedTuple, Optional

from ..state.kinds import StoreKind
from ..state.timestamped import decode_timestamped
from ..windows import Window, Windowed
from .stores import SessionStore, TimestampedKeyValueStore, TimestampedWindowStore
from .stores.versioned import VersionedKeyValueStore

#: the timestamp a write carries: the current record's, or the task's stream time
Now = Callable[[], int]


class VersionedRecord(NamedTuple):
    """A version of a versioned store's key: its value and the time it is valid from."""

    value: Any
    timestamp: int


class UserStore:
    """What every user-facing store has: its ``name``, and the typed store under it."""

    def __init__(self, typed: Any, now: Now):
        self.name = typed.name
        self._typed = typed
        self._now = now

    def persistent(self) -> bool:
        return True

    def is_open(self) -> bool:
        return True


class KeyValueStore(UserStore):
    """Kafka's ``KeyValueStore``: ``get``, ``put`` (``None`` deletes), ``put_if_absent``,
    ``put_all``, ``delete``, ``range``, ``reverse_range``, ``all``, ``reverse_all``,
    ``prefix_scan``, ``approximate_num_entries``. Iterations yield ``(key, value)``."""

    _typed: TimestampedKeyValueStore

    def get(self, key: Any) -> Any:
        entry = self._typed.get(_not_none(self.name, key))
        return None if entry is None else entry[0]

    def put(self, key: Any, value: Any) -> None:
        self._typed.put(_not_none(self.name, key), value, self._now())

    def put_if_absent(self, key: Any, value: Any) -> Any:
        """Put unless the key has a value; returns the value it had (None if absent)."""
        old = self.get(key)
        if old is None:
            self.put(key, value)
        return old

    def put_all(self, entries: Any) -> None:
        for key, value in entries:
            self.put(key, value)

    def delete(self, key: Any) -> Any:
        """Delete the key; returns the value it had."""
        old = self.get(key)
        if old is not None:
            self.put(key, None)
        return old

    def _bytes_store(self) -> Any:
        """The byte store with this batch's writes handed to it, for scans."""
        self._typed.write_back()
        return self._typed.store

    def _items(self, pairs: Iterator[tuple[bytes, bytes]]) -> Iterator[tuple[Any, Any]]:
        key_serde, value_serde = self._typed.key_serde, self._typed.value_serde
        for kb, raw in pairs:
            yield key_serde.deserialize(kb), value_serde.deserialize(decode_timestamped(raw)[0])

    def _bounds(self, key_from: Any, key_to: Any) -> tuple[Optional[bytes], Optional[bytes]]:
        serde = self._typed.key_serde
        return (None if key_from is None else serde.serialize(key_from),
                None if key_to is None else serde.serialize(key_to))

    def range(self, key_from: Any = None, key_to: Any = None) -> Iterator[tuple[Any, Any]]:
        """Entries with ``key_from <= key <= key_to`` (None: open) in serialized-key order."""
        return self._items(self._bytes_store().range(*self._bounds(key_from, key_to)))

    def reverse_range(self, key_from: Any = None, key_to: Any = None) -> Iterator[tuple[Any, Any]]:
        lo, hi = self._bounds(key_from, key_to)
        store = self._bytes_store()
        upper = None if hi is None else hi + b"\x00"   # between_reversed's upper bound is exclusive
        return self._items(store.between_reversed(lo, upper))

    def all(self) -> Iterator[tuple[Any, Any]]:
        return self._items(self._bytes_store().all())

    def reverse_all(self) -> Iterator[tuple[Any, Any]]:
        return self._items(self._bytes_store().between_reversed(None, None))

    def prefix_scan(self, prefix: Any, prefix_serde: Any = None) -> Iterator[tuple[Any, Any]]:
        """Entries whose serialized key starts with ``prefix`` serialized (by
        ``prefix_serde``, default the key serde)."""
        serde = prefix_serde or self._typed.key_serde
        return self._items(self._bytes_store().prefix_scan(serde.serialize(prefix)))

    def approximate_num_entries(self) -> int:
        return self._bytes_store().approximate_num_entries()


class WindowStore(UserStore):
    """Kafka's ``WindowStore``: ``put(key, value, window_start)`` (``None`` deletes),
    ``fetch(key, time)`` -> value, ``fetch(key, time_from, time_to)`` -> ``[(start,
    value)]``, ``fetch_all(time_from, time_to)`` and ``all()`` -> ``[(Windowed, value)]``."""

    _typed: TimestampedWindowStore

    def put(self, key: Any, value: Any, window_start: int) -> None:
        self._typed.put(_not_none(self.name, key), window_start, value, self._now())

    def fetch(self, key: Any, time_from: int, time_to: Optional[int] = None) -> Any:
        if time_to is None:
            entry = self._typed.get(_not_none(self.name, key), time_from)
            return None if entry is None else entry[0]
        return [(start, value) for start, value, _ in self._typed.fetch(key, time_from, time_to)]

    def backward_fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        return self.fetch(key, time_from, time_to)[::-1]

    def fetch_all(self, time_from: Optional[int] = None,
                  time_to: Optional[int] = None) -> list[tuple[Windowed, Any]]:
        return [(windowed, value) for windowed, value, _ in self._typed.fetch_all(time_from, time_to)]

    def all(self) -> list[tuple[Windowed, Any]]:
        return sorted(self.fetch_all(), key=lambda e: (self._typed.key_bytes(e[0].key), e[0].window.start))


class SessionStore(UserStore):
    """Kafka's ``SessionStore``: ``put(Windowed(key, Window(start, end)), agg)``,
    ``remove(windowed)``, ``fetch_session(key, start, end)``, ``find_sessions(key,
    earliest_end, latest_start)`` and ``fetch(key)`` -> ``[(Windowed, agg)]``."""

    _typed: SessionStore

    def put(self, session: Windowed, agg: Any) -> None:
        self._typed.put(_not_none(self.name, session.key), session.window, agg, self._now())

    def remove(self, session: Windowed) -> None:
        self._typed.remove(session.key, session.window, self._now())

    def fetch_session(self, key: Any, start: int, end: int) -> Any:
        entry = self._typed.get(_not_none(self.name, key), Window(start, end))
        return None if entry is None else entry[0]

    def find_sessions(self, key: Any, earliest_end: int, latest_start: int) -> list[tuple[Windowed, Any]]:
        return [(Windowed(key, window), agg)
                for window, agg, _ in self._typed.find_sessions(key, earliest_end, latest_start)]

    def fetch(self, key: Any) -> list[tuple[Windowed, Any]]:
        return [(Windowed(key, window), agg) for window, agg, _ in self._typed.fetch_sessions(key)]


class VersionedKeyValueStore(UserStore):
    """Kafka's ``VersionedKeyValueStore``: ``put(key, value, timestamp)``,
    ``get(key[, as_of])`` -> :class:`VersionedRecord` or None, ``delete(key, timestamp)``."""

    _typed: VersionedKeyValueStore

    def put(self, key: Any, value: Any, timestamp: int) -> bool:
        """Add a version valid from ``timestamp``; False if that is older than the history."""
        self._typed.observe(timestamp)
        return self._typed.put(_not_none(self.name, key), value, timestamp)

    def get(self, key: Any, as_of: Optional[int] = None) -> Optional[VersionedRecord]:
        found = self._typed.get_as_of(_not_none(self.name, key), (1 << 62) if as_of is None else as_of)
        return None if found is None else VersionedRecord(*found)

    def delete(self, key: Any, timestamp: int) -> Optional[VersionedRecord]:
        """A tombstone version at ``timestamp``; returns the version it ends."""
        old = self.get(key, timestamp)
        self.put(key, None, timestamp)
        return old


USER_STORES: dict[StoreKind, type[UserStore]] = {
    StoreKind.KV: KeyValueStore, StoreKind.WINDOW: WindowStore, StoreKind.SESSION: SessionStore,
    StoreKind.VERSIONED: VersionedKeyValueStore,
}


def _not_none(store: str, key: Any) -> Any:
    if key is None:
        raise TypeError(f"store {store!r}: key cannot be None")
    return key
