"""Timestamped key-value stores, as processors and queries see them.

Values are kept with their timestamp (Kafka's timestamped key-value store); the
processor-side store caches deserialized values for the batch so a hot key is decoded
once, and writes its changes to the byte store in one ``put_many`` at the end of the
batch, each with its record's timestamp.
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from ...state.timestamped import decode_timestamped, encode_timestamped_column
from .base import Entry, StoreView, TypedStore

_MISSING = object()


class TimestampedKeyValueStore(TypedStore):
    """``get(key) -> (value, timestamp) | None`` and ``put(key, value, timestamp)``."""

    def __init__(self, name: str, store: Any, key_serde: Any, value_serde: Any):
        super().__init__(name, store, key_serde, value_serde)
        self._cache: dict[bytes, Entry] = {}
        self._dirty: dict[bytes, int] = {}     # key bytes -> changelog timestamp

    def get(self, key: Any) -> Entry:
        return self.get_by_bytes(self.key_serde.serialize(key))

    def get_by_bytes(self, kb: bytes) -> Entry:
        cached = self._cache.get(kb, _MISSING)
        if cached is not _MISSING:
            return cached
        entry = self._cache[kb] = self._decode(self.store.get(kb))
        return entry

    def get_many_by_bytes(self, kbs: list[bytes]) -> list[Entry]:
        """Entries of many keys with one multi-get for those not read in this batch yet."""
        missing = [kb for kb in kbs if kb not in self._cache]
        if missing:
            self._cache.update(zip(missing, self._decode_many(self.store.get_many(missing))))
        return [self._cache[kb] for kb in kbs]

    def put_by_bytes(self, kb: bytes, value: Any, timestamp: int) -> None:
        self._cache[kb] = None if value is None else (value, timestamp)
        self._dirty[kb] = timestamp

    def put_many_by_bytes(self, kbs: list[bytes], values: list, timestamps: list[int]) -> None:
        """:meth:`put_by_bytes` of many distinct keys (a ``None`` value deletes)."""
        if any(value is None for value in values):
            self._cache.update((kb, None if value is None else (value, ts))
                               for kb, value, ts in zip(kbs, values, timestamps))
        else:
            self._cache.update(zip(kbs, zip(values, timestamps)))
        self._dirty.update(zip(kbs, timestamps))

    def put(self, key: Any, value: Any, timestamp: int) -> None:
        self.put_by_bytes(self.key_serde.serialize(key), value, timestamp)

    def write_back(self) -> None:
        """Hand this batch's changes to the byte store (called before the store commits)."""
        if self._dirty:
            kbs = list(self._dirty)
            entries = [self._cache[kb] for kb in kbs]
            try:
                raws = encode_timestamped_column(self.value_serde, entries)
            except Exception:  # noqa: BLE001 - key by key names the store and the key
                raws = [None if entry is None else self._encode(kb, entry) for kb, entry in zip(kbs, entries)]
            self.store.put_many(list(zip(kbs, raws)), timestamps=list(self._dirty.values()))
            self._dirty.clear()
        self._cache.clear()


class KeyValueStoreView(StoreView):
    """Read-only, typed view of a timestamped store for queries (``app.store(name)``,
    ``driver.get_key_value_store(name)``): plain values, as in Kafka Streams."""

    def _items(self, pairs) -> Iterator[tuple[Any, Any]]:
        for kb, raw in pairs:
            yield self._key_serde.deserialize(kb), self._value(raw)

    def get(self, key: Any) -> Any:
        """The key's current value, or ``None``."""
        return self._value(self._store.get(self._key_bytes(key)))

    def get_with_timestamp(self, key: Any) -> Optional[tuple[Any, int]]:
        raw = self._store.get(self._key_bytes(key))
        if raw is None:
            return None
        value, ts = decode_timestamped(raw)
        return self._value_serde.deserialize(value), ts

    def range(self, key_from: Any = None, key_to: Any = None) -> Iterator[tuple[Any, Any]]:
        """``(key, value)`` pairs with ``key_from <= key <= key_to`` in serialized-key order."""
        lo = None if key_from is None else self._key_serde.serialize(key_from)
        hi = None if key_to is None else self._key_serde.serialize(key_to)
        return self._items(self._store.range(lo, hi))

    def all(self) -> Iterator[tuple[Any, Any]]:
        return self._items(self._store.all())

    def prefix_scan(self, prefix: Any) -> Iterator[tuple[Any, Any]]:
        return self._items(self._store.prefix_scan(self._key_bytes(prefix)))

    def approximate_num_entries(self) -> int:
        return self._store.approximate_num_entries()
