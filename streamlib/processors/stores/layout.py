"""Byte layouts of window and session stores inside a task's key-value byte store.

Every entry lives in the task's ordinary :class:`~streamlib.state.KeyValueStore`, so
change-logging, undo of a re-run batch, restore and read-only views work unchanged.
An entry is identified by its key and a *slot* of times: ``(start,)`` for a window,
``(end, start)`` for a session (Kafka orders sessions by key, end, start).

- data:  ``tag + 4-byte len(key) + key + times(slot)`` → timestamped value, so one
  key's entries are one range scan, ordered by slot.
- index: ``b"t" + time(slot[0]) + 4-byte len(key) + key + times(slot[1:])`` → ``b""``,
  ordered by the first time (window start, session end), so expiry and time-range
  queries scan only the entries they need.

Times are 8-byte big-endian with the sign bit flipped (offset binary), so byte order is
numeric order for negative times too.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from ...state.bounds import Bounds, prefix_bounds
from ...state.reads import KeyValue, KeyValueReads

Slot = tuple[int, ...]
INDEX_TAG = b"t"
_LEN = struct.Struct(">I")
_TIME = struct.Struct(">Q")
_TIMES2 = struct.Struct(">QQ")
_BIAS = 1 << 63
_MAX_TIME = _BIAS - 1


def encode_time(t: int) -> bytes:
    return _TIME.pack(t + _BIAS)


def decode_time(data: bytes, offset: int = 0) -> int:
    return _TIME.unpack_from(data, offset)[0] - _BIAS


def _after(t: Optional[int]) -> Optional[bytes]:
    """Encoded ``t + 1``: the exclusive upper bound of times ``<= t`` (None: unbounded)."""
    return None if t is None or t >= _MAX_TIME else encode_time(t + 1)


@dataclass(frozen=True)
class KeyRange:
    """Entries whose serialized key is in ``[lo, hi]`` (byte order, as Kafka's key ranges)
    and whose first time (window start, session end) is in ``[time_from, time_to]``;
    ``None``: open."""

    lo: Optional[bytes] = None
    hi: Optional[bytes] = None
    time_from: Optional[int] = None
    time_to: Optional[int] = None

    def times(self, first: int) -> bool:
        return ((self.time_from is None or first >= self.time_from)
                and (self.time_to is None or first <= self.time_to))


class Layout:
    """The layout of one store kind: a data tag and the number of times in a slot."""

    def __init__(self, tag: bytes, width: int):
        if tag == INDEX_TAG:
            raise ValueError("the data tag must differ from the index tag")
        self.tag = tag
        self.width = width

    # -- keys ----------------------------------------------------------------------------
    def _times(self, slot: Slot) -> bytes:
        if len(slot) != self.width:
            raise ValueError(f"expected {self.width} times, got {slot!r}")
        if len(slot) == 2:   # sessions, and the join's stream buffer once per record: inline
            return _TIMES2.pack(slot[0] + _BIAS, slot[1] + _BIAS)
        return b"".join(encode_time(t) for t in slot)

    def data_key(self, kb: bytes, slot: Slot) -> bytes:
        if self.width == 1 and len(slot) == 1:
            # the window store's case, once per window a batch touches: inline (1.8 -> 0.7 us)
            return self.tag + _LEN.pack(len(kb)) + kb + _TIME.pack(slot[0] + _BIAS)
        return self.tag + _LEN.pack(len(kb)) + kb + self._times(slot)

    def index_key(self, kb: bytes, slot: Slot) -> bytes:
        return INDEX_TAG + encode_time(slot[0]) + _LEN.pack(len(kb)) + kb + self._times(slot)[8:]

    def parse_data(self, dk: bytes) -> tuple[bytes, Slot]:
        n = _LEN.unpack_from(dk, 1)[0]
        kb = bytes(dk[5:5 + n])
        if self.width == 2:
            first, second = _TIMES2.unpack_from(dk, 5 + n)
            return kb, (first - _BIAS, second - _BIAS)
        return kb, tuple(decode_time(dk, 5 + n + 8 * i) for i in range(self.width))

    def parse_index(self, ik: bytes) -> tuple[bytes, Slot]:
        n = _LEN.unpack_from(ik, 9)[0]
        kb = bytes(ik[13:13 + n])
        rest = tuple(decode_time(ik, 13 + n + 8 * i) for i in range(self.width - 1))
        return kb, (decode_time(ik, 1), *rest)

    def index_to_data(self, ik: bytes) -> bytes:
        return self.data_key(*self.parse_index(ik))

    # -- bounds --------------------------------------------------------------------------
    def key_bounds(self, kb: bytes, lo: Optional[int] = None, hi: Optional[int] = None) -> Bounds:
        """Data entries of ``kb`` whose first time is in ``[lo, hi]`` (None: open)."""
        stem = self.tag + _LEN.pack(len(kb)) + kb
        lower = stem if lo is None else stem + encode_time(lo)
        after = _after(hi)
        return lower, prefix_bounds(stem)[1] if after is None else stem + after

    def length_bounds(self, n: int, lo: Optional[bytes], hi: Optional[bytes]) -> Optional[Bounds]:
        """Data entries whose key has ``n`` bytes and lies in ``[lo, hi]`` (byte order,
        None: open), or None when no such key can exist. Keys of one length are stored
        in byte order, so they are one range: from ``lo`` (when ``lo`` is longer than
        ``n``: past keys ``== lo[:n]``, which sort before ``lo``) to ``hi`` (when ``hi``
        is shorter: before keys starting with ``hi``, which sort after it)."""
        stem = self.tag + _LEN.pack(n)
        end = prefix_bounds(stem)[1]   # the data tag is not 0xff: never None
        lower = stem if lo is None else stem + lo if len(lo) <= n else prefix_bounds(stem + lo[:n])[1]
        upper = end if hi is None else stem + hi if len(hi) < n else prefix_bounds(stem + hi[:n])[1]
        upper = min(upper, end)
        return (lower, upper) if lower < upper else None

    def index_bounds(self, lo: Optional[int] = None, hi: Optional[int] = None) -> Bounds:
        """Index entries whose first time is in ``[lo, hi]`` (None: open)."""
        lower = INDEX_TAG if lo is None else INDEX_TAG + encode_time(lo)
        after = _after(hi)
        return lower, prefix_bounds(INDEX_TAG)[1] if after is None else INDEX_TAG + after

    # -- scans over any byte store (task-side or read-only) -------------------------------
    def scan_key(self, reads: KeyValueReads, kb: bytes, lo: Optional[int] = None,
                 hi: Optional[int] = None) -> Iterator[tuple[bytes, Slot, bytes]]:
        """``(data key, slot, raw value)`` of ``kb`` with first time in ``[lo, hi]``, by slot."""
        for dk, raw in reads.between(*self.key_bounds(kb, lo, hi)):
            yield dk, self.parse_data(dk)[1], raw

    def scan_key_reverse(self, reads: KeyValueReads, kb: bytes, lo: Optional[int] = None,
                         hi: Optional[int] = None) -> Iterator[tuple[bytes, Slot, bytes]]:
        """Like :meth:`scan_key`, newest slot first: one backward seek to the last entry
        of ``kb`` with first time ``<= hi``, so reading the first costs one seek."""
        for dk, raw in reads.between_reversed(*self.key_bounds(kb, lo, hi)):
            yield dk, self.parse_data(dk)[1], raw

    def scan_range(self, between: Callable[[Bounds], Iterator[KeyValue]], keys: KeyRange,
                   bounds: Bounds = (None, None)) -> Iterator[KeyValue]:
        """Raw data entries ``(data key, value)`` within ``keys`` and raw ``bounds``, in
        stored order (key length, key bytes, slot), read with ``between`` (a scan of
        raw bounds): per key length present, a probe finds it (the first entry at or
        after the current position) and one range scan reads its :meth:`length_bounds`,
        so the keys outside the range are skipped by seeks, not read."""
        every = prefix_bounds(self.tag)
        pos = max(bounds[0] or every[0], every[0])
        stop = every[1] if bounds[1] is None else min(bounds[1], every[1])
        while pos < stop:
            probe = between((pos, stop))
            first = next(probe, None)
            if first is None:
                return
            n = _LEN.unpack_from(first[0], len(self.tag))[0]
            found = self.length_bounds(n, keys.lo, keys.hi)
            if found is not None:
                lower, upper = max(found[0], pos), min(found[1], stop)
                if first[0] >= lower:   # the probe is already there
                    pairs = _chain(first, probe)
                else:
                    pairs = between((lower, upper)) if lower < upper else iter(())
                for dk, raw in pairs:
                    if dk >= upper:
                        break
                    if keys.times(decode_time(dk, len(self.tag) + 4 + n)):
                        yield dk, raw
            pos = prefix_bounds(self.tag + _LEN.pack(n))[1]

    def scan_index(self, reads: KeyValueReads, lo: Optional[int] = None,
                   hi: Optional[int] = None) -> Iterator[tuple[bytes, Slot]]:
        """``(key bytes, slot)`` with first time in ``[lo, hi]``, in stored order (first
        time, key length, key, rest)."""
        for ik, _ in reads.between(*self.index_bounds(lo, hi)):
            yield self.parse_index(ik)

    def all_entries(self, reads: KeyValueReads) -> list[tuple[bytes, Slot, bytes]]:
        """``(key bytes, slot, raw value)`` of every entry, by key bytes then slot (the
        stored order is by key *length* first, hence the sort)."""
        found = []
        for dk, raw in reads.prefix_scan(self.tag):
            kb, slot = self.parse_data(dk)
            found.append((kb, slot, raw))
        found.sort(key=lambda e: (e[0], e[1]))
        return found

    def time_entries(self, reads: KeyValueReads, lo: Optional[int] = None,
                     hi: Optional[int] = None) -> list[tuple[bytes, Slot, bytes]]:
        """``(key bytes, slot, raw value)`` with first time in ``[lo, hi]``, by first time,
        key bytes, rest of the slot. An index entry whose data is gone (a view refreshed
        between the two reads) is skipped."""
        found = list(self.scan_index(reads, lo, hi))
        raws = reads.get_many([self.data_key(kb, slot) for kb, slot in found])
        entries = [(kb, slot, raw) for (kb, slot), raw in zip(found, raws) if raw is not None]
        entries.sort(key=time_order)
        return entries


def _chain(first: KeyValue, rest: Iterator[KeyValue]) -> Iterator[KeyValue]:
    yield first
    yield from rest


def time_order(entry: tuple) -> tuple:
    """Sort key of ``(key bytes, slot, ...)``: first time, key bytes, rest of the slot."""
    kb, slot = entry[0], entry[1]
    return slot[0], kb, slot[1:]

WINDOWS = Layout(b"w", 1)
SESSIONS = Layout(b"s", 2)
