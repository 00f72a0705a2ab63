"""Window stores that keep duplicates, and the buffer of a stream–stream outer join.

:class:`DuplicatesWindowStore` is Kafka's window store with ``retainDuplicates``: every
put is a new entry, so one key may hold several records at one time (the two stores of
a stream–stream join). An entry's slot is ``(time, sequence)``: the sequence orders the
records of one key and time in arrival order, as Kafka's ``seqnum`` does, and is taken
as one more than the largest one stored, so it survives restarts.

:class:`OuterJoinBuffer` is Kafka's ``outerJoinStore`` of ``KStreamKStreamJoin``: records
that found no partner yet, ordered by time, side (right before left) and key bytes,
each key holding the list of its values.
"""
from __future__ import annotations

import struct
from typing import Any, Iterator

from ...serdes import Serde
from .layout import Layout, decode_time, encode_time
from .timed import TimedStore
from .window import WindowStoreView

DUPLICATES = Layout(b"d", 2)
_LEN = struct.Struct(">I")


class DuplicatesWindowStore(TimedStore):
    """A window store keeping every record put: ``put`` adds, ``fetch`` returns all of
    a key's records in a time range, by time then arrival.

    Examples
    --------
    >>> import tempfile
    >>> from streamlib.serdes import Serdes
    >>> from streamlib.state import StoreSpec, open_task_stores
    >>> stores = open_task_stores(tempfile.mkdtemp(), [StoreSpec("j", logging=False)])
    >>> stores.begin(0)
    >>> j = DuplicatesWindowStore("j", stores["j"], Serdes.string(), Serdes.string(), 10)
    >>> j.put("a", "x", 5); j.put("a", "y", 5); j.put("a", "z", 20)
    >>> j.fetch("a", 0, 10)
    [(5, 'x', 5), (5, 'y', 5)]
    >>> j.write_back(); stores.commit(); stores.close()
    """

    def __init__(self, name: str, store: Any, key_serde: Serde, value_serde: Serde,
                 window_size_ms: int):
        super().__init__(name, store, key_serde, value_serde, DUPLICATES)
        self.window_size_ms = window_size_ms

    def put(self, key: Any, value: Any, timestamp: int) -> None:
        """Add a record of ``key`` at ``timestamp`` (a ``None`` value is ignored, as Kafka)."""
        if value is None:
            return
        kb = self.key_serde.serialize(key)
        same_time = self._key_entries(kb, timestamp, timestamp)
        seq = same_time[-1][0][1] + 1 if same_time else 0
        self._put(kb, (timestamp, seq), value, timestamp)

    def fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any, int]]:
        """``(time, value, timestamp)`` of the key's records with time in
        ``[time_from, time_to]``, by time then arrival."""
        kb = self.key_serde.serialize(key)
        return [(slot[0], value, ts) for slot, value, ts in self._key_entries(kb, time_from, time_to)]


class DuplicatesWindowStoreView(WindowStoreView):
    """Read-only view of a :class:`DuplicatesWindowStore` (``driver.get_window_store``):
    ``fetch(key, time_from, time_to)`` lists ``(time, value)`` of every record."""

    layout = DUPLICATES

    def __init__(self, name: str, store: Any, key_serde: Serde, value_serde: Serde,
                 window_size_ms: int = 0):
        super().__init__(name, store, key_serde, value_serde, window_size_ms)

    def all(self) -> list[tuple[Any, int, Any]]:
        """``(key, time, value)`` of every record, by key bytes, time, arrival."""
        return [(self._key_serde.deserialize(kb), slot[0], self._value(raw))
                for kb, slot, raw in DUPLICATES.all_entries(self._store)]


class OuterJoinBuffer:
    """Records of a stream–stream left/outer join still waiting for a partner.

    A key is ``time + side + key bytes`` (side ``1`` left, ``0`` right: Kafka's
    ``TimestampedKeyAndJoinSide`` order); its value is the list of the records' value
    bytes (Kafka's list-value store), so deleting a key drops all its records."""

    def __init__(self, name: str, store: Any):
        self.name = name
        self.store = store

    @staticmethod
    def _key(time: int, left: bool, kb: bytes) -> bytes:
        return encode_time(time) + (b"\x01" if left else b"\x00") + kb

    def add(self, time: int, left: bool, kb: bytes, value: bytes) -> None:
        """Append a record to the list of ``(time, side, key)``."""
        key = self._key(time, left, kb)
        self.store.put(key, (self.store.get(key) or b"") + _LEN.pack(len(value)) + value, time)

    def remove(self, time: int, left: bool, kb: bytes) -> None:
        """Drop every record of ``(time, side, key)`` (Kafka's ``putIfAbsent(key, null)``)."""
        key = self._key(time, left, kb)
        if self.store.get(key) is not None:
            self.store.put(key, None)

    def delete_key(self, key: bytes) -> None:
        self.store.put(key, None)

    def entries(self) -> Iterator[tuple[bytes, int, bool, bytes, list[bytes]]]:
        """``(store key, time, left?, key bytes, values)`` in store order."""
        for key, raw in self.store.all():
            values, i = [], 0
            while i < len(raw):
                n = _LEN.unpack_from(raw, i)[0]
                values.append(bytes(raw[i + 4:i + 4 + n]))
                i += 4 + n
            yield key, decode_time(key), key[8] == 1, bytes(key[9:]), values

    def write_back(self) -> None:
        """The buffer writes straight into the byte store: nothing is held back."""
