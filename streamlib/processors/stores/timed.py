"""The processor side shared by window and session stores: a batch cache over a layout.

Reads see the batch's pending writes; values are decoded once per batch. At the end of
the batch :meth:`TimedStore.write_back` turns each changed entry into two ordinary KV
writes (data and time index) with the record's timestamp, in one ``put_many``.
"""
from __future__ import annotations

import heapq
from typing import Any, Iterable, Optional

from ...serdes import Serde
from .base import Entry, TypedStore
from .layout import Layout, Slot, time_order

_MISSING = object()


class TimedStore(TypedStore):
    """Entries addressed by ``(key bytes, slot)``; see :mod:`.layout`."""

    def __init__(self, name: str, store: Any, key_serde: Serde, value_serde: Serde, layout: Layout):
        super().__init__(name, store, key_serde, value_serde)
        self.layout = layout
        self._reset()

    def _reset(self) -> None:
        self._cache: dict[bytes, Entry] = {}            # data key -> entry (None = absent)
        self._dirty: dict[bytes, Optional[int]] = {}    # data key -> changelog timestamp
        self._dirty_slots: dict[bytes, set[Slot]] = {}  # key bytes -> slots changed this batch
        self._puts_by_time: list[tuple[int, bytes]] = []  # (first time, data key) of puts, a heap
        self._expired_to: Optional[int] = None          # expire() already covered times below

    # -- entries -------------------------------------------------------------------------
    def _get(self, kb: bytes, slot: Slot) -> Entry:
        dk = self.layout.data_key(kb, slot)
        cached = self._cache.get(dk, _MISSING)
        if cached is _MISSING:
            cached = self._cache[dk] = self._decode(self.store.get(dk))
        return cached

    def _get_many(self, kbs: list[bytes], slots: list[Slot]) -> list[tuple[bytes, Entry]]:
        """``(data key, entry)`` of many entries: one multi-get for those not read yet."""
        dks = [self.layout.data_key(kb, slot) for kb, slot in zip(kbs, slots)]
        cache = self._cache
        missing = [dk for dk in dks if dk not in cache]
        if missing:
            cache.update(zip(missing, self._decode_many(self.store.get_many(missing))))
        return [(dk, cache[dk]) for dk in dks]

    def _set(self, kb: bytes, slot: Slot, dk: bytes, entry: Entry, stamp: Optional[int]) -> None:
        self._cache[dk] = entry
        self._dirty[dk] = stamp
        self._dirty_slots.setdefault(kb, set()).add(slot)
        if entry is not None:
            heapq.heappush(self._puts_by_time, (slot[0], dk))

    def _put(self, kb: bytes, slot: Slot, value: Any, timestamp: int) -> None:
        """Write ``value`` (None deletes) with ``timestamp``."""
        self._set(kb, slot, self.layout.data_key(kb, slot),
                  None if value is None else (value, timestamp), timestamp)

    def _remove(self, kb: bytes, slot: Slot, timestamp: Optional[int]) -> None:
        self._set(kb, slot, self.layout.data_key(kb, slot), None, timestamp)

    def _cached(self, dk: bytes, raw: bytes) -> Entry:
        cached = self._cache.get(dk, _MISSING)
        if cached is _MISSING:
            cached = self._cache[dk] = self._decode(raw)
        return cached

    def _pending(self, kb: bytes, slots: Iterable[Slot], lo: Optional[int],
                 hi: Optional[int]) -> Iterable[tuple[Slot, Entry]]:
        for slot in slots:
            if (lo is None or slot[0] >= lo) and (hi is None or slot[0] <= hi):
                yield slot, self._cache[self.layout.data_key(kb, slot)]

    def _key_entries(self, kb: bytes, lo: Optional[int] = None,
                     hi: Optional[int] = None) -> list[tuple[Slot, Any, int]]:
        """``(slot, value, ts)`` of ``kb`` with first time in ``[lo, hi]``, by slot."""
        found: dict[Slot, Entry] = {slot: self._cached(dk, raw)
                                    for dk, slot, raw in self.layout.scan_key(self.store, kb, lo, hi)}
        found.update(self._pending(kb, self._dirty_slots.get(kb, ()), lo, hi))
        return [(slot, e[0], e[1]) for slot, e in sorted(found.items()) if e is not None]

    def _key_nearest(self, kb: bytes, lo: Optional[int], hi: Optional[int],
                     newest: bool) -> Optional[tuple[Slot, Any, int]]:
        """``(slot, value, ts)`` of ``kb``'s newest (or oldest) entry with first time in
        ``[lo, hi]``, or None: one seek into the byte store (backward for the newest)
        instead of a scan over all of the key's entries in the range."""
        layout = self.layout
        scan = layout.scan_key_reverse if newest else layout.scan_key
        best: Optional[tuple[Slot, Entry]] = None
        for dk, slot, raw in scan(self.store, kb, lo, hi):
            entry = self._cached(dk, raw)
            if entry is not None:     # None: deleted earlier in this batch, look further
                best = (slot, entry)
                break
        for slot, entry in self._pending(kb, self._dirty_slots.get(kb, ()), lo, hi):
            if entry is not None and (best is None or (slot > best[0] if newest else slot < best[0])):
                best = (slot, entry)
        return None if best is None else (best[0], best[1][0], best[1][1])

    def _time_entries(self, lo: Optional[int] = None,
                      hi: Optional[int] = None) -> list[tuple[bytes, Slot, Any, int]]:
        """``(key bytes, slot, value, ts)`` with first time in ``[lo, hi]``, by first
        time, key bytes, then the rest of the slot."""
        layout = self.layout
        indexed = list(layout.scan_index(self.store, lo, hi))
        dks = [layout.data_key(kb, slot) for kb, slot in indexed]
        missing = [dk for dk in dks if dk not in self._cache]
        for dk, raw in zip(missing, self.store.get_many(missing)):
            self._cache[dk] = self._decode(raw)
        found: dict[tuple[bytes, Slot], Entry] = {
            (kb, slot): self._cache[dk] for (kb, slot), dk in zip(indexed, dks)}
        for kb, slots in self._dirty_slots.items():
            found.update(((kb, slot), e) for slot, e in self._pending(kb, slots, lo, hi))
        entries = [(kb, slot, e[0], e[1]) for (kb, slot), e in found.items() if e is not None]
        entries.sort(key=time_order)
        return entries

    # -- expiry --------------------------------------------------------------------------
    def expire(self, before: int, timestamp: Optional[int] = None) -> None:
        """Delete every entry whose first time (window start, session end) is ``< before``.

        Scans only the index below ``before`` (and, within a batch, only the part not
        scanned by an earlier call); ``timestamp`` is the tombstones' changelog timestamp
        (None: now)."""
        heap = self._puts_by_time
        done = self._expired_to
        if done is not None and before <= done and not (heap and heap[0][0] < before):
            return
        if done is None or before > done:
            for kb, slot in self.layout.scan_index(self.store, done, before - 1):
                self._remove(kb, slot, timestamp)
            self._expired_to = before
        while heap and heap[0][0] < before:
            _, dk = heapq.heappop(heap)
            if self._cache.get(dk) is not None:
                kb, slot = self.layout.parse_data(dk)
                self._set(kb, slot, dk, None, timestamp)

    # -- end of batch --------------------------------------------------------------------
    def write_back(self) -> None:
        """Hand the batch's changes to the byte store, each with its timestamp: the data
        entry, and the index entry when the entry appears or disappears. Deletes of
        entries the byte store never had are dropped (a session created and merged away
        within the batch leaves no changelog record). The byte store remembers what this
        reads, so the commit's undo record costs no second read."""
        if not self._dirty:
            self._reset()
            return
        layout = self.layout
        dks = list(self._dirty)
        items: list[tuple[bytes, Optional[bytes]]] = []
        stamps: list[Optional[int]] = []
        for dk, was in zip(dks, self.store.get_many(dks)):
            entry, stamp = self._cache[dk], self._dirty[dk]
            if entry is None and was is None:
                continue
            kb, slot = layout.parse_data(dk)
            items.append((dk, None if entry is None else self._encode(kb, entry)))
            stamps.append(stamp)
            if entry is None or was is None:
                items.append((layout.index_key(kb, slot), None if entry is None else b""))
                stamps.append(stamp)
        if items:
            self.store.put_many(items, timestamps=stamps)
        self._reset()
