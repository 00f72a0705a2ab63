"""A buffer of stream records per key, kept for a grace period: what the stream–table
join with grace re-joins when a table update arrives late.

Records live in the task's byte store in the window-store layout (:mod:`.layout`) with
a slot of (timestamp, sequence number), so one key's records are one range scan in
timestamp order (ties in arrival order), expiry scans the time index, and
change-logging, undo and restore work unchanged. Each entry keeps the record's value
and headers; the next sequence number is kept under a meta key of the same byte store.
"""
from __future__ import annotations

import struct
from typing import Any, Optional

from ...serdes import Serde
from ..record import decode_headers, encode_headers
from .layout import Layout
from .timed import TimedStore

BUFFERED = Layout(b"b", 2)
_META = b"m"
_LONG = struct.Struct(">q")
_LEN = struct.Struct(">I")

#: a buffered record: (timestamp, value, headers)
Buffered = tuple[int, Any, tuple]


class BufferedValueSerde:
    """``(value, headers)`` as bytes: the value in its serde, then each header."""

    def __init__(self, inner: Serde):
        self.inner = inner

    def serialize(self, entry: tuple[Any, tuple]) -> bytes:
        value, headers = entry
        raw = self.inner.serialize(value)
        return _LEN.pack(len(raw)) + raw + encode_headers(headers)

    def deserialize(self, data: bytes) -> tuple[Any, tuple]:
        data = bytes(data)
        (n,) = _LEN.unpack_from(data, 0)
        return self.inner.deserialize(data[4:4 + n]), decode_headers(data, 4 + n)


class StreamBuffer(TimedStore):
    """``put(key, value, timestamp, headers)``, ``fetch(key, time_from, time_to)`` and
    ``expire(before)`` (inherited: drops records with timestamp < ``before``).

    Examples
    --------
    >>> import tempfile
    >>> from streamlib.serdes import Serdes
    >>> from streamlib.state import StoreSpec, open_task_stores
    >>> stores = open_task_stores(tempfile.mkdtemp(), [StoreSpec("b", logging=False)])
    >>> stores.begin(0)
    >>> b = StreamBuffer("b", stores["b"], Serdes.string(), Serdes.string())
    >>> b.put("A", "x", 6); b.put("A", "y", 6, (("h", b"1"),)); b.put("A", "z", 9)
    >>> b.fetch("A", 5, 8)
    [(6, 'x', ()), (6, 'y', (('h', b'1'),))]
    >>> b.expire(7); b.fetch("A", 0, 100)
    [(9, 'z', ())]
    >>> b.write_back(); stores.commit(); stores.close()
    """

    def __init__(self, name: str, store: Any, key_serde: Serde, value_serde: Serde):
        super().__init__(name, store, key_serde, BufferedValueSerde(value_serde), BUFFERED)
        raw = store.get(_META)
        self._sequence = self._stored_sequence = 0 if raw is None else _LONG.unpack(raw)[0]

    def put(self, key: Any, value: Any, timestamp: int, headers: tuple = ()) -> None:
        """Buffer a stream record (after the key's other records with this timestamp)."""
        self._put(self.key_serde.serialize(key), (timestamp, self._sequence), (value, headers),
                  timestamp)
        self._sequence += 1

    def fetch(self, key: Any, time_from: int, time_to: Optional[int] = None) -> list[Buffered]:
        """The key's records with timestamp in ``[time_from, time_to]`` (None: open), by
        timestamp then arrival."""
        kb = self.key_serde.serialize(key)
        return [(ts, entry[0], entry[1]) for _, entry, ts in self._key_entries(kb, time_from, time_to)]

    def write_back(self) -> None:
        """The batch's records, then the sequence number if it moved."""
        super().write_back()
        if self._sequence != self._stored_sequence:
            self.store.put(_META, _LONG.pack(self._sequence))
            self._stored_sequence = self._sequence
