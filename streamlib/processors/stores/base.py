"""What every processor-side typed store shares: serdes, and values kept with their timestamp."""
from __future__ import annotations

from typing import Any, Iterator, Optional

from ...serdes import Serde
from ...state.timestamped import decode_timestamped, decode_timestamped_column, encode_timestamped
from ..base import ProcessingError

#: A decoded entry: ``(value, timestamp)``, or ``None`` for absent / deleted.
Entry = Optional[tuple[Any, int]]


class TypedStore:
    """Base of the processor-side stores: ``name``, ``key_serde``, ``value_serde``.

    Subclasses buffer a batch's writes as decoded values and hand them to the task's byte
    store in :meth:`write_back`, which the task calls before the byte stores commit.
    """

    def __init__(self, name: str, store: Any, key_serde: Serde, value_serde: Serde):
        self.name = name
        self.store = store
        self.key_serde = key_serde
        self.value_serde = value_serde

    def key_bytes(self, key: Any) -> bytes:
        return self.key_serde.serialize(key)

    def _key_repr(self, kb: bytes) -> str:
        try:
            return repr(self.key_serde.deserialize(kb))
        except Exception:
            return repr(kb)

    def _decode(self, raw: Optional[bytes]) -> Entry:
        if raw is None:
            return None
        value, ts = decode_timestamped(raw)
        return self.value_serde.deserialize(value), ts

    def _decode_many(self, raws: list[Optional[bytes]]) -> list[Entry]:
        """:meth:`_decode` of many stored values, the values deserialized as one column
        (value by value if that fails: its error is then exactly :meth:`_decode`'s)."""
        try:
            payloads, stamps = decode_timestamped_column(raws)
            values = self.value_serde.deserialize_column(payloads)
        except Exception:  # noqa: BLE001 - one by one below raises precisely
            return [self._decode(raw) for raw in raws]
        return [None if raw is None else (value, ts) for raw, value, ts in zip(raws, values, stamps.tolist())]

    def _encode(self, kb: bytes, entry: tuple[Any, int]) -> bytes:
        """The stored bytes of ``entry``; a value the serde rejects names the store and key."""
        try:
            value = self.value_serde.serialize(entry[0])
        except Exception as exc:
            raise ProcessingError(
                f"store {self.name!r} cannot serialize the value {entry[0]!r} of key "
                f"{self._key_repr(kb)}: {exc}; give the store a value serde "
                "(Materialized...with_value_serde) or change default_value_serde") from exc
        return encode_timestamped(value, entry[1])

    def write_back(self) -> None:
        raise NotImplementedError


class StoreView:
    """Base of the read-only query views: ``name`` and typed reads over a byte store."""

    def __init__(self, name: str, store: Any, key_serde: Serde, value_serde: Serde):
        self.name = name
        self._store = store
        self._key_serde = key_serde
        self._value_serde = value_serde

    def _key_bytes(self, key: Any) -> bytes:
        """``key`` serialized; a ``None`` key is an error, as in Kafka's stores (a miss
        would read as "no such key")."""
        if key is None:
            raise TypeError(f"store {self.name!r}: key cannot be None")
        return self._key_serde.serialize(key)

    def _value(self, raw: Optional[bytes]) -> Any:
        if raw is None:
            return None
        return self._value_serde.deserialize(decode_timestamped(raw)[0])


class WindowedStoreView(StoreView):
    """Base of the window and session views: entries over a :mod:`.layout`, each a
    ``Windowed`` key (``_windowed`` of the key bytes and the entry's slot)."""

    #: the byte layout of the store's entries (what an HTTP page's raw bounds are in)
    layout: Any

    def _windowed(self, kb: bytes, slot: tuple[int, ...]) -> Any:
        raise NotImplementedError

    def stored(self) -> Iterator[tuple[Any, Any]]:
        """``(Windowed, value)`` of every entry, read lazily in stored order (key
        length, key bytes, then slot): a page of an HTTP scan reads only its entries."""
        for dk, raw in self._store.prefix_scan(self.layout.tag):
            kb, slot = self.layout.parse_data(dk)
            yield self._windowed(kb, slot), self._value(raw)
