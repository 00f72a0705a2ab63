"""Raw RocksDB access through rocksdict in raw mode: the bottom layer of every store.

Keys and values are bytes. A database has two column families: the default one holds
the store's data, ``streamlib`` its bookkeeping (last batch, changelog offset, undo
record), so data iteration and counts never see bookkeeping and one WriteBatch can
update both atomically.

RocksDB keeps its LOCK while anything still references the database (a column family
handle, a live iterator), so this wrapper hands out no such objects: scans read pages
through short-lived iterators.
"""
from __future__ import annotations

import atexit
import fcntl
import os
import struct
import time
import weakref
from itertools import islice
from typing import Callable, Iterable, Iterator, Mapping, Optional, Sequence

from rocksdict import AccessType, Options, ReadOptions, Rdict, WriteBatch

from streamlib.errors import StoreWriteFailed, one_line
from streamlib.state.bounds import Bounds

META_CF = "streamlib"
_SCAN_PAGE = 1024
#: Seconds between looks at a LOCK another process was asked to release.
_LOCK_POLL = 0.002


class StoreLockTimeout(TimeoutError):
    """Another process kept a store's RocksDB lock for longer than the timeout."""


def _options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    opts.set_keep_log_file_num(2)
    # RocksDB starts this many threads at every open to load its table files (16 by
    # default). A task's store has a handful of them and is opened each time Spark runs
    # the task in another Python worker: with 16, an open took 11.4 ms (median), with 2
    # 9.1 ms (two column families, a few files, 1,000 writes between opens; 1 thread:
    # 9.0 ms).
    opts.set_max_file_opening_threads(2)
    return opts


def _is_lock_error(exc: Exception) -> bool:
    return "lock" in str(exc).lower()


def _retry_open(open_db: Callable[[], Rdict], retryable: Callable[[Exception], bool],
                timeout: float, what: str, on_wait: Optional[Callable[[], None]] = None,
                lock_file: Optional[str] = None) -> Rdict:
    """Call ``open_db`` until it succeeds, backing off while the error is ``retryable``
    (calling ``on_wait()`` before each pause). While another process holds
    ``lock_file``, a pause ends as soon as it lets go: a holder asked to release its
    stores does so within milliseconds, and the backoff alone would oversleep that."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            return open_db()
        except Exception as exc:
            if not retryable(exc):
                raise
            if time.monotonic() >= deadline:
                raise StoreLockTimeout(f"gave up opening {what} after {timeout:g}s: {exc}") from exc
            if on_wait is not None:
                on_wait()
            # Never ask about a lock this process holds: closing the descriptor the
            # question needs would drop that lock (POSIX).
            held_here = "current process" in str(exc)
            _pause(pause, None if lock_file is None or held_here else lock_file)
            pause = min(pause * 2, 0.1)


def _pause(seconds: float, lock_file: Optional[str]) -> None:
    """Sleep ``seconds``, or until no other process holds ``lock_file`` any more."""
    end = time.monotonic() + seconds
    if lock_file is None or not lock_held_elsewhere(lock_file):
        time.sleep(seconds)
        return
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(_LOCK_POLL, left))
        if not lock_held_elsewhere(lock_file):
            return


def lock_held_elsewhere(path: str) -> bool:
    """Whether another process holds a POSIX write lock on ``path`` (RocksDB's LOCK).
    Not for a process that may hold that lock itself: closing the descriptor this
    opens drops every POSIX lock the process has on the file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        query = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        return struct.unpack("hhqqi4x", answer)[0] != fcntl.F_UNLCK
    finally:
        os.close(fd)


def db_identity(path: str | os.PathLike) -> Optional[bytes]:
    """The unique id RocksDB gave the database at ``path`` when it was created (None if
    there is none): tells a recreated database from the one opened earlier."""
    try:
        with open(os.path.join(path, "IDENTITY"), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


class RocksDB:
    """One RocksDB database (data + bookkeeping) opened for writing or as a secondary."""

    def __init__(self, db: Rdict, path: str):
        self._db = db
        self.path = path
        self._closed = False
        _OPEN.add(self)
        # Looked up once: get_column_family() per read costs milliseconds on a busy DB.
        self._meta: Optional[Rdict] = db.get_column_family(META_CF)

    @classmethod
    def open(cls, path: str | os.PathLike, lock_timeout: float = 30.0,
             on_wait: Optional[Callable[[], None]] = None) -> RocksDB:
        """Open read-write, waiting up to ``lock_timeout`` s for a previous holder's LOCK
        (``on_wait()`` is called while waiting, e.g. to ask the holder to release it)."""
        path = os.fspath(path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        db = _retry_open(lambda: Rdict(path, _options(), column_families={META_CF: _options()}),
                         _is_lock_error, lock_timeout, f"state store {path} (RocksDB LOCK held)", on_wait,
                         os.path.join(path, "LOCK"))
        return cls(db, path)

    @classmethod
    def open_secondary(cls, path: str | os.PathLike, scratch_dir: str, timeout: float = 10.0) -> RocksDB:
        """Open as a RocksDB secondary instance: takes no lock and tolerates a writer that
        opens, writes and compacts the same database meanwhile (files may vanish while we
        open, hence the retries)."""
        path = os.fspath(path)
        if not os.path.exists(os.path.join(path, "CURRENT")):
            raise FileNotFoundError(f"no state store at {path}")
        db = _retry_open(lambda: Rdict(path, _options(), column_families={META_CF: _options()},
                                       access_type=AccessType.secondary(scratch_dir)),
                         lambda exc: True, timeout, f"state store {path} as a secondary")
        return cls(db, path)

    @classmethod
    def open_read_only(cls, path: str | os.PathLike) -> RocksDB:
        """Open read-only, without a lock: for a copy nobody writes (a checkpoint)."""
        path = os.fspath(path)
        if not os.path.exists(os.path.join(path, "CURRENT")):
            raise FileNotFoundError(f"no state store at {path}")
        return cls(Rdict(path, _options(), column_families={META_CF: _options()},
                         access_type=AccessType.read_only()), path)

    def get_many(self, keys: Sequence[bytes]) -> list[Optional[bytes]]:
        """One multi-get for all ``keys``."""
        return self._db.get(list(keys)) if keys else []

    def get(self, key: bytes) -> Optional[bytes]:
        return self._db.get(key)

    def scan(self, bounds: Bounds, first_page: int = _SCAN_PAGE) -> Iterator[tuple[bytes, bytes]]:
        """Data entries within ``bounds`` in key order, read in pages (the first of
        ``first_page`` entries, for a caller that wants only a few)."""
        lower, upper = bounds
        size = first_page
        while True:
            opts = ReadOptions()
            if upper is not None:
                opts.set_iterate_upper_bound(upper)
            page = list(islice(self._db.items(from_key=lower, read_opt=opts), size))
            yield from page
            if len(page) < size:
                return
            lower = page[-1][0] + b"\x00"
            size = _SCAN_PAGE

    def scan_reverse(self, bounds: Bounds) -> Iterator[tuple[bytes, bytes]]:
        """Data entries within ``bounds`` in *descending* key order: one seek-for-prev to
        the last key below the upper bound, then backwards. Pages start small and grow,
        as a caller often wants only the first entry (a version lookup). The bounds are
        checked here: rocksdict's backward iteration does not honour a lower bound."""
        lower, upper = bounds
        size = 8
        while True:
            opts = ReadOptions()
            if upper is not None:
                opts.set_iterate_upper_bound(upper)
            it = (self._db.items(backwards=True, from_key=upper, read_opt=opts) if upper is not None
                  else self._db.items(backwards=True, read_opt=opts))
            page = list(islice(it, size))
            for kv in page:
                if lower is not None and kv[0] < lower:
                    return
                if upper is None or kv[0] < upper:
                    yield kv
            if len(page) < size:
                return
            upper = page[-1][0]
            size = min(size * 4, _SCAN_PAGE)

    def approximate_num_entries(self) -> int:
        return self._db.property_int_value("rocksdb.estimate-num-keys") or 0

    def meta_get(self, key: bytes) -> Optional[bytes]:
        return self._meta.get(key)

    def write(self, data: Iterable[tuple[bytes, Optional[bytes]]],
              meta: Mapping[bytes, Optional[bytes]]) -> None:
        """Apply data and bookkeeping changes (``None`` = delete) as ONE atomic WriteBatch."""
        batch = WriteBatch(raw_mode=True)
        for key, value in data:
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        meta_cf = self._db.get_column_family_handle(META_CF)
        for key, value in meta.items():
            if value is None:
                batch.delete(key, meta_cf)
            else:
                batch.put(key, value, meta_cf)
        del meta_cf
        try:
            self._db.write(batch)
        except Exception as exc:  # rocksdict raises a bare Exception: "IO error: No space left ..."
            raise StoreWriteFailed(one_line(f"the RocksDB copy at {self.path} refused a write: {exc}")) from exc

    def flush_in_background(self) -> None:
        """Start writing both column families' memtables to table files in RocksDB's
        background thread, without waiting. rocksdict flushes a database when it closes
        it; a copy flushed beforehand closes in about a millisecond instead of several,
        and closing is what a hand-over to another process waits for. (Kafka Streams
        flushes its RocksDB stores at every commit too.)"""
        self._db.flush(False)
        self._meta.flush(False)

    def catch_up(self) -> None:
        """Secondary only: see what the writer has committed since."""
        self._db.try_catch_up_with_primary()

    def close(self) -> None:
        """Release the database (and its LOCK); closing twice is harmless."""
        if not self._closed:
            self._closed = True
            _OPEN.discard(self)
            self._meta = None  # a live column-family handle would keep the LOCK
            self._db.close()


#: Every database this process has open (weakly: a dropped handle closes itself).
_OPEN: "weakref.WeakSet[RocksDB]" = weakref.WeakSet()


@atexit.register
def close_open_databases() -> None:
    """Close every database still open when the interpreter exits. A handle left to
    finalization is freed while RocksDB's background threads and static objects are torn
    down, which now and then kills a normal exit with SIGSEGV (a driver that queried a
    store and stopped its application, then returned). Registered at import, so it runs
    after the hooks of the modules above this one (atexit runs last-in first-out), which
    stop their threads first. Spark's workers leave with ``os._exit`` and skip it."""
    for db in list(_OPEN):
        try:
            db.close()
        except Exception:  # noqa: BLE001 - exiting: a failed close must not stop the others
            pass
