"""Pages of a store scan: at most ``limit`` entries, an opaque cursor pinned to one batch.

A scan over HTTP cannot hold a store's whole state in one answer, and a client paging
through a store must not see half of one batch and half of the next. The first page
pins the version published when it starts; its cursor names that batch and the last
key served, and later pages read the same version (the replica's undo records keep it
exact while newer batches apply) for ``cursor_ttl`` after the last page that used it.
Past that the cursor has expired (410): holding a version keeps every newer batch's
undo records in memory.
"""
from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence

from streamlib.processors.stores.layout import KeyRange
from streamlib.query.replica import Version
from streamlib.state.reads import KeyValue, KeyValueReads

Bounds = tuple[Optional[bytes], Optional[bytes]]


class HttpError(Exception):
    """An answer other than 200: ``status``, the reason, and extra response headers."""

    def __init__(self, status: int, message: str, headers: Optional[dict[str, str]] = None):
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


@dataclass(frozen=True)
class Cursor:
    """Where a scan continues: after raw key ``after`` up to ``upper`` (exclusive), in
    ``batch`` (``None``: a store without changelog, read live and not pinned), within
    ``keys`` (a window or session store's key range, ``None``: every raw key).

    >>> c = Cursor("counts", 7, b"k\\x01", None)
    >>> Cursor.decode(c.encode()) == c
    True
    >>> c = Cursor("windows", 7, b"w", None, KeyRange(b"a", None, 0, 99))
    >>> Cursor.decode(c.encode()) == c
    True
    """

    store: str
    batch: Optional[int]
    after: bytes
    upper: Optional[bytes]
    keys: Optional[KeyRange] = None

    def encode(self) -> str:
        fields = [self.store, self.batch, _b64(self.after), _b64(self.upper)]
        if self.keys is not None:
            k = self.keys
            fields.append([_b64(k.lo), _b64(k.hi), k.time_from, k.time_to])
        raw = json.dumps(fields, separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> "Cursor":
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            store, batch, after, upper, *rest = json.loads(raw)
            keys = None
            if rest:
                lo, hi, time_from, time_to = rest[0]
                keys = KeyRange(_unb64(lo), _unb64(hi), _int(time_from), _int(time_to))
            return cls(str(store), _int(batch), base64.b64decode(after, validate=True), _unb64(upper), keys)
        except (ValueError, TypeError) as exc:
            raise HttpError(400, f"bad cursor {text[:40]!r}: {exc}") from None


def _b64(data: Optional[bytes]) -> Optional[str]:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: Optional[str]) -> Optional[bytes]:
    return None if text is None else base64.b64decode(text, validate=True)


def _int(value: Any) -> Optional[int]:
    return None if value is None else int(value)


class PinnedVersions:
    """The versions cursors continue from, each held ``ttl`` seconds after its last use."""

    def __init__(self, ttl_seconds: float, clock: Callable[[], float] = time.monotonic):
        self._ttl = ttl_seconds
        self._clock = clock
        self._held: dict[int, tuple[Version, float]] = {}
        self._lock = threading.Lock()

    def hold(self, version: Version) -> None:
        now = self._clock()
        with self._lock:
            self._held = {b: held for b, held in self._held.items() if held[1] > now}
            self._held[version.batch] = (version, now + self._ttl)

    def find(self, batch: int) -> Optional[Version]:
        with self._lock:
            held = self._held.get(batch)
        return held[0] if held is not None and held[1] > self._clock() else None

    def __len__(self) -> int:
        now = self._clock()
        with self._lock:
            return sum(1 for _, until in self._held.values() if until > now)


class Budget:
    """What one request may spend: answer bytes (413 beyond) and time (503 beyond)."""

    def __init__(self, max_bytes: int, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.max_bytes = max_bytes
        self.seconds = seconds
        self._clock = clock
        self._deadline = clock() + seconds

    def check(self, size: int) -> None:
        if size > self.max_bytes:
            raise HttpError(413, f"the answer exceeds {self.max_bytes} bytes; ask for fewer entries "
                                 "(a smaller limit or a narrower range)")
        self.check_time()

    def check_time(self) -> None:
        if self._clock() > self._deadline:
            raise HttpError(503, f"the request took longer than {self.seconds:g} s; ask for fewer "
                                 "entries (a smaller limit or a narrower range)", {"Retry-After": "1"})


class PageReads(KeyValueReads):
    """``reads`` restricted to raw ``bounds`` at ``version`` (``None``: as read now),
    and to ``keys`` of a window or session store's ``layout`` when given, noting the
    raw key of the last entry read and the bytes read so far, so a typed view's scan
    over it (a key-value view's ``all()``, a windowed view's ``stored()``) yields one
    page's entries in stored order, whatever range the view asks for. Reading checks
    ``budget``'s time now and then (entries outside ``keys``' times are skipped)."""

    def __init__(self, reads: Any, version: Optional[Version], bounds: Bounds, budget: Budget,
                 layout: Any = None, keys: Optional[KeyRange] = None):
        self._reads = reads
        self._version = version
        self._bounds = bounds
        self._budget = budget
        self._layout = layout
        self._keys = keys
        self.last_key: Optional[bytes] = None
        self.bytes_read = 0

    def get_many(self, keys: Sequence[bytes]) -> list[Optional[bytes]]:
        return self._reads.get_many(keys)

    def approximate_num_entries(self) -> int:
        return self._reads.approximate_num_entries()

    def _between(self, bounds: Bounds) -> Iterator[KeyValue]:
        if self._version is not None:
            return self._reads.scan_at(self._version, bounds)
        return self._reads.between(*bounds)

    def _scan(self, bounds: Bounds) -> Iterator[KeyValue]:
        if self._keys is None:
            pairs = self._between(self._bounds)
        else:
            pairs = self._layout.scan_range(self._timed(self._between), self._keys, self._bounds)
        for key, value in pairs:
            self.last_key = key
            self.bytes_read += len(key) + len(value)
            yield key, value

    def _timed(self, between: Callable[[Bounds], Iterator[KeyValue]]) -> Callable[[Bounds], Iterator[KeyValue]]:
        """``between``, checking the time budget every 256 entries it reads."""
        def scan(bounds: Bounds) -> Iterator[KeyValue]:
            for i, pair in enumerate(between(bounds)):
                if i % 256 == 255:
                    self._budget.check_time()
                yield pair
        return scan


def scan_page(entries_of: Callable[[KeyValueReads], Iterator[dict]], reads: Any, pins: PinnedVersions,
              store: str, bounds: Bounds, cursor: Optional[Cursor], limit: int, budget: Budget,
              layout: Any = None, keys: Optional[KeyRange] = None) -> dict:
    """One page of ``store``'s entries within raw ``bounds`` and ``keys`` of a window or
    session store's ``layout`` (or continuing ``cursor``): ``{"entries": [...], "next":
    cursor or None}``, the entries as ``entries_of`` (the JSON entries of a typed scan
    over the reads it is given) yields them."""
    version = None
    if cursor is not None:
        bounds = (cursor.after + b"\x00", cursor.upper)
        keys = cursor.keys
        if cursor.batch is not None:
            version = pins.find(cursor.batch)
            if version is None:
                published = reads.pin_version()
                if published.batch != cursor.batch:
                    raise HttpError(410, f"cursor expired: batch {cursor.batch} of store {store!r} is "
                                         "no longer held; start the scan again without after")
                version = published
    elif hasattr(reads, "pin_version"):
        version = reads.pin_version()
    page = PageReads(reads, version, bounds, budget, layout, keys)
    entries: list[dict] = []
    items = iter(entries_of(page))
    last: Optional[bytes] = None
    for entry in items:
        entries.append(entry)
        last = page.last_key
        if len(entries) % 64 == 0:
            budget.check(page.bytes_read)
        if len(entries) == limit:
            break
    budget.check(page.bytes_read)
    more = len(entries) == limit and next(items, None) is not None
    if not more:
        return {"entries": entries, "next": None}
    if version is not None:
        pins.hold(version)
    batch = None if version is None else version.batch
    return {"entries": entries, "next": Cursor(store, batch, last, bounds[1], keys).encode()}
