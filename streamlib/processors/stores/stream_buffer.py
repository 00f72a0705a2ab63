"""A buffer of stream records per key, kept for a grace period: what the stream–table
join with grace re-joins when a table update arrives late.

Records live in the task's byte store in the window-store layout (:mod:`.layout`) with
a slot of (timestamp, sequence number), so one key's records are one range scan in
timestamp order (ties in arrival order), expiry scans the time index, and
change-logging, undo and restore work unchanged. Each entry keeps the record's value
and headers; the next sequence number is kept under a meta key of the same byte store.

A batch's own records stay in a list per key until the batch ends: each has a new
sequence number, so its slot is in neither the byte store nor the batch's cache, and
it needs no read there, no dirty mark and no expiry entry. Most of a large batch's
records expire within it (the grace passes while the batch runs): those are never
written at all.
"""
from __future__ import annotations

import struct
from operator import itemgetter
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

    def _reset(self) -> None:
        super()._reset()
        #: key bytes -> this batch's records of the key in arrival order: (slot, value, headers)
        self._fresh: dict[bytes, list[tuple[tuple[int, int], Any, tuple]]] = {}
        #: the newest timestamp earlier batches' records have (-inf: none; None: not read yet)
        self._stored_newest: Optional[float] = None

    def put(self, key: Any, value: Any, timestamp: int, headers: tuple = ()) -> None:
        """Buffer a stream record (after the key's other records with this timestamp)."""
        kb = self.key_serde.serialize(key)
        entry = ((timestamp, self._sequence), value, headers)
        fresh = self._fresh.get(kb)
        if fresh is None:
            self._fresh[kb] = [entry]
        else:
            fresh.append(entry)
        self._sequence += 1

    def fetch(self, key: Any, time_from: int, time_to: Optional[int] = None) -> list[Buffered]:
        """The key's records with timestamp in ``[time_from, time_to]`` (None: open), by
        timestamp then arrival."""
        kb = self.key_serde.serialize(key)
        # a table update newer than every stored record (the usual case) needs no seek
        found = [] if time_from > self.stored_newest() else [
            (slot, entry[0], entry[1]) for slot, entry, _ in self._key_entries(kb, time_from, time_to)]
        fresh = self._fresh.get(kb)
        if fresh:
            found += [e for e in fresh if e[0][0] >= time_from and (time_to is None or e[0][0] <= time_to)]
            found.sort(key=itemgetter(0))
        return [(slot[0], value, headers) for slot, value, headers in found]

    def stored_newest(self) -> float:
        """The newest timestamp of the records earlier batches stored (-inf: none); one
        backward seek into the time index per batch (this batch's expiry only lowers it)."""
        if self._stored_newest is None:
            last = next(self.store.between_reversed(*self.layout.index_bounds()), None)
            self._stored_newest = float("-inf") if last is None else self.layout.parse_index(last[0])[1][0]
        return self._stored_newest

    def expire(self, before: int, timestamp: Optional[int] = None) -> None:
        super().expire(before, timestamp)
        for kb, fresh in list(self._fresh.items()):
            kept = [e for e in fresh if e[0][0] >= before]
            if not kept:
                del self._fresh[kb]
            elif len(kept) < len(fresh):
                self._fresh[kb] = kept

    def write_back(self) -> None:
        """The batch's records that did not expire, then the sequence number if it moved."""
        layout = self.layout
        items: list[tuple[bytes, bytes]] = []
        stamps: list[int] = []
        for kb, fresh in self._fresh.items():
            for slot, value, headers in fresh:
                timestamp = slot[0]
                items += ((layout.data_key(kb, slot), self._encode(kb, ((value, headers), timestamp))),
                          (layout.index_key(kb, slot), b""))
                stamps += (timestamp, timestamp)
        super().write_back()
        if items:
            self.store.put_new(items, stamps)
        if self._sequence != self._stored_sequence:
            self.store.put(_META, _LONG.pack(self._sequence))
            self._stored_sequence = self._sequence

