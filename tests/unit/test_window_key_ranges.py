"""Key ranges over window and session stores, whose keys are stored by length first.

``Layout.scan_range`` reads the entries whose serialized key lies in ``[lo, hi]`` in
byte order (Kafka's ``fetch(keyFrom, keyTo, ...)``), one range per key length; checked
against a filter over every entry, for keys of different lengths, prefixes of each
other, empty and 0xff bytes, and continued from any entry (an HTTP cursor)."""
from __future__ import annotations

import bisect

from hypothesis import given, settings
from hypothesis import strategies as st

from streamlib.processors.stores.layout import SESSIONS, WINDOWS, KeyRange

KEYS = st.binary(max_size=4).map(lambda b: bytes(b"\x00a\x62\xff"[x % 4] for x in b))
TIMES = st.integers(-3, 3)


class Sorted:
    """A byte store: its entries in key order, read by raw bounds (upper exclusive),
    counting the entries each scan reads."""

    def __init__(self, entries: dict[bytes, bytes]):
        self.keys = sorted(entries)
        self.entries = entries
        self.read = 0

    def between(self, bounds):
        lower, upper = bounds
        i = 0 if lower is None else bisect.bisect_left(self.keys, lower)
        for key in self.keys[i:]:
            if upper is not None and key >= upper:
                return
            self.read += 1
            yield key, self.entries[key]


def _store(layout, keys_slots):
    return Sorted({layout.data_key(kb, slot): kb + b"=" + repr(slot).encode() for kb, slot in keys_slots})


def _expected(store, layout, keys: KeyRange, start: bytes | None = None):
    found = []
    for dk in store.keys:
        kb, slot = layout.parse_data(dk)
        if ((keys.lo is None or kb >= keys.lo) and (keys.hi is None or kb <= keys.hi) and keys.times(slot[0])
                and (start is None or dk >= start)):
            found.append((dk, store.entries[dk]))
    return found


@settings(max_examples=300, deadline=None)
@given(entries=st.lists(st.tuples(KEYS, TIMES), max_size=30), lo=st.none() | KEYS, hi=st.none() | KEYS,
       time_from=st.none() | TIMES, time_to=st.none() | TIMES, cut=st.integers(0, 40))
def test_a_window_key_range_is_the_keys_between_its_bounds_in_byte_order(entries, lo, hi, time_from, time_to, cut):
    store = _store(WINDOWS, [(kb, (t,)) for kb, t in entries])
    keys = KeyRange(lo, hi, time_from, time_to)
    expected = _expected(store, WINDOWS, keys)
    assert list(WINDOWS.scan_range(store.between, keys)) == expected
    # continued after any entry, as a cursor does: exactly the rest
    if store.keys:
        after = store.keys[cut % len(store.keys)] + b"\x00"
        assert list(WINDOWS.scan_range(store.between, keys, (after, None))) == _expected(store, WINDOWS, keys, after)


@settings(max_examples=200, deadline=None)
@given(entries=st.lists(st.tuples(KEYS, TIMES, TIMES), max_size=30), lo=st.none() | KEYS, hi=st.none() | KEYS)
def test_a_session_key_range_is_the_keys_between_its_bounds_in_byte_order(entries, lo, hi):
    store = _store(SESSIONS, [(kb, (max(a, b), min(a, b))) for kb, a, b in entries])
    keys = KeyRange(lo, hi)
    assert list(SESSIONS.scan_range(store.between, keys)) == _expected(store, SESSIONS, keys)


def test_length_bounds_of_keys_longer_shorter_and_prefixes_of_the_bounds():
    def keys_of_length(n, lo, hi):
        lower, upper = WINDOWS.length_bounds(n, lo, hi) or (b"", b"")
        return [kb for kb in (b"", b"a", b"ab", b"abc", b"b", b"ba", b"a\xff", b"\xff\xff", b"b\x00\x00")
                if len(kb) == n and lower <= WINDOWS.data_key(kb, (0,)) < upper]

    assert keys_of_length(1, b"ab", b"b") == [b"b"]          # "a" < "ab": out
    assert keys_of_length(2, b"ab", b"b") == [b"ab", b"a\xff"]   # "ba" > "b": out
    assert keys_of_length(3, b"ab", b"b") == [b"abc"]        # "b\0\0" > "b": out
    assert keys_of_length(0, None, b"a") == [b""]
    assert WINDOWS.length_bounds(0, b"a", None) is None
    assert WINDOWS.length_bounds(2, b"\xff\xff\x00", None) is None   # nothing of 2 bytes is after it


def test_keys_outside_the_range_are_skipped_by_seeks_not_read():
    lengths = range(1, 9)
    store = _store(WINDOWS, [(bytes([c]) * n, (0,)) for n in lengths for c in b"abcdefghij"])
    keys = KeyRange(b"e", b"e\xff")
    found = list(WINDOWS.scan_range(store.between, keys))
    assert [WINDOWS.parse_data(dk)[0] for dk, _ in found] == [b"e" * n for n in lengths]
    # per length: a probe's first entry and the one past the range
    assert store.read <= 3 * len(lengths)
