"""Task stores kept open between batches in a long-lived process (a reused Spark Python worker).

Opening a task's RocksDB stores costs milliseconds per store, every batch; Spark reuses
its Python workers, so the next batch of a task often runs in the process that ran the
last one. :class:`StoreCache` keeps a task's :class:`TaskStores` open after a successful
batch and hands them to the next batch of the same task in the same process.

Hand-over to another process. A cached holder keeps the RocksDB LOCK, and Spark may
schedule the task's next batch in another worker. An opener that finds the LOCK held
(:func:`streamlib.state.open_task_stores`) keeps creating the file
:data:`RELEASE_REQUEST` in the task directory while it waits; a holder's reaper thread
looks for that file every few milliseconds and closes the cached stores (a cached
entry is idle by definition: a batch that uses the stores takes them out of the cache
first, so nothing is closed under a running batch). A batch that finishes while a
request is pending closes instead of caching. Without requests, an entry closes after
``lease`` idle seconds. So a second opener waits for a poll interval, never for a
batch, and never opens a store another process is using: the LOCK decides as before.
Two things keep that wait short. A cached copy starts flushing its memtables in
RocksDB's background thread as soon as it is cached (rocksdict flushes at close; with
nothing left to flush a close takes about a millisecond), and a Spark task that runs
several tasks asks for all their stores before the first one runs
(:meth:`StoreCache.request_release`), so the later hand-overs overlap its work.

A cached copy is reused only under the same key (the caller's: the run of the
application that opened it, the store specs and changelog settings) and only if its
databases are still the ones on disk (same directories, same RocksDB ``IDENTITY``): a
restart, a reset, or a deleted or recreated copy opens afresh. The reaper also closes
an entry as soon as one of its directories is deleted or replaced (an open handle must
not outlive its directory: RocksDB writes and deletes files by name, and a new copy
may be created under the same name). ``Streams.stop()`` closes every entry of the
application (:func:`release_everywhere`), and a process that exits normally stops the
reaper and closes its entries first (:meth:`StoreCache.shutdown`, at exit). Every reuse
runs ``TaskStores.begin`` as a fresh open does: roll back, drop or catch up from the
changelog, so a copy left behind while another host ran the task is brought up to date.
"""
from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from typing import Callable, Hashable, Optional

from streamlib.state.rocksdb import db_identity, lock_held_elsewhere
from streamlib.state.task import RELEASE_REQUEST, TaskStores, ask_to_release, withdraw_release_request

log = logging.getLogger("streamlib.state")

#: Seconds an unused cached entry stays open (with no request to release it).
DEFAULT_LEASE = 30.0
#: Seconds between the reaper's looks for release requests.
POLL_INTERVAL = 0.005


class _Entry:
    __slots__ = ("key", "stores", "identities", "inodes", "idle_since")

    def __init__(self, key: Hashable, stores: TaskStores, idle_since: float):
        self.key = key
        self.stores = stores
        self.identities = _identities(stores)
        self.inodes = _inodes(stores)
        self.idle_since = idle_since

    def on_disk(self) -> bool:
        """Whether the entry's databases are still the ones on disk."""
        return self.inodes == _inodes(self.stores) and self.identities == _identities(self.stores)


class StoreCache:
    """Open :class:`TaskStores` by task directory, between batches of one process.

    Examples
    --------
    >>> import tempfile
    >>> from streamlib.state import StoreSpec, open_task_stores
    >>> cache, task_dir = StoreCache(lease=5.0), tempfile.mkdtemp()
    >>> opener = lambda: open_task_stores(task_dir, [StoreSpec("s", logging=False)])
    >>> first = cache.acquire(task_dir, "specs", opener)
    >>> cache.release(task_dir, "specs", first)
    >>> cache.acquire(task_dir, "specs", opener) is first
    True
    >>> cache.discard(first)
    """

    def __init__(self, lease: float = DEFAULT_LEASE, poll_interval: float = POLL_INTERVAL):
        self.lease = lease
        self.poll_interval = poll_interval
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._reaper: Optional[threading.Thread] = None
        self._reaper_pid = 0
        self._stop_reaper = threading.Event()
        self.hits = 0
        self.misses = 0

    def acquire(self, task_dir: str, key: Hashable, open_stores: Callable[[], TaskStores]) -> TaskStores:
        """The task's stores: the cached ones if still valid, else ``open_stores()``."""
        with self._lock:
            entry = self._entries.pop(task_dir, None)
        if entry is not None:
            if entry.key == key and entry.on_disk():
                self.hits += 1
                entry.stores.reset_metrics()
                return entry.stores
            _close(entry.stores)
        self.misses += 1
        return open_stores()

    def release(self, task_dir: str, key: Hashable, stores: TaskStores) -> None:
        """After a committed batch: keep ``stores`` open for the task's next batch here,
        unless another process asks for them (then close now)."""
        if self.lease <= 0 or os.path.exists(os.path.join(task_dir, RELEASE_REQUEST)):
            stores.close()
            return
        try:
            # Most of a close is flushing memtables: done now, in RocksDB's background
            # thread, the next process to run the task waits ~1 ms per store for the
            # close instead of ~5 (half of all batches run in the other Python worker).
            stores.flush_in_background()
        except Exception:  # noqa: BLE001 - an unusable copy is closed, not kept
            _close(stores)
            return
        entry = _Entry(key, stores, time.monotonic())
        with self._lock:
            old = self._entries.pop(task_dir, None)
            self._entries[task_dir] = entry
            # (a forked child inherits the attribute, not the thread)
            if self._reaper is None or self._reaper_pid != os.getpid():
                self._stop_reaper = threading.Event()
                self._reaper = threading.Thread(target=self._reap, args=(self._stop_reaper,),
                                                name="streamlib-store-cache", daemon=True)
                self._reaper_pid = os.getpid()
                self._reaper.start()
        if old is not None and old.stores is not stores:
            _close(old.stores)

    def request_release(self, task_dirs: list[str]) -> None:
        """Ask the processes that keep the stores of ``task_dirs`` open to close them
        (those cached here are left alone); the opener removes the request once it has
        the stores (:func:`~streamlib.state.open_task_stores`)."""
        with self._lock:
            elsewhere = [task_dir for task_dir in task_dirs if task_dir not in self._entries]
        for task_dir in elsewhere:
            ask_to_release(task_dir)

    def discard(self, stores: TaskStores) -> None:
        """After a failed batch: close (uncommitted changes are dropped with the handle)."""
        stores.close()

    def close_all(self) -> None:
        """Close every cached entry (e.g. before deleting state directories)."""
        self.close_under("")

    def close_under(self, directory: str) -> int:
        """Close the entries of task directories under ``directory`` (all for "");
        return how many."""
        prefix = os.path.join(os.path.abspath(directory), "") if directory else ""
        with self._lock:
            doomed = [task_dir for task_dir in self._entries
                      if os.path.join(os.path.abspath(task_dir), "").startswith(prefix)]
            entries = [self._entries.pop(task_dir) for task_dir in doomed]
        for entry in entries:
            _close(entry.stores)
        return len(entries)

    def shutdown(self) -> None:
        """Stop the reaper, then close every entry: run at interpreter exit. Open RocksDB
        handles and a polling reaper left to the interpreter's finalization made about
        one normal exit in six abort ("pthread lock: Invalid argument") or segfault.
        (Spark's workers leave with ``os._exit``, which skips this and needs nothing.)"""
        with self._lock:
            reaper, self._reaper = self._reaper, None
            self._stop_reaper.set()
        if reaper is not None and reaper.is_alive() and reaper is not threading.current_thread():
            reaper.join()
        self.close_all()

    def __len__(self) -> int:
        return len(self._entries)

    def _reap(self, stop: threading.Event) -> None:
        """Close entries that are requested elsewhere, idle past the lease, or whose
        directories were deleted or replaced. Runs until :meth:`shutdown` (a task takes
        its entry out while it runs, so the cache is often empty for a moment; a
        sleeping thread costs nothing)."""
        while not stop.wait(self.poll_interval):
            now = time.monotonic()
            doomed = []
            with self._lock:
                for task_dir, entry in list(self._entries.items()):
                    if (now - entry.idle_since > self.lease
                            or os.path.exists(os.path.join(task_dir, RELEASE_REQUEST))
                            or entry.inodes != _inodes(entry.stores)):
                        doomed.append(self._entries.pop(task_dir))
            for entry in doomed:
                _close(entry.stores)


def _close(stores: TaskStores) -> None:
    """Close task stores that no batch uses. A failure (RocksDB cannot flush into a
    deleted directory) is logged: it must neither stop the reaper, which every hand-over
    needs, nor fail the batch that opens a fresh copy, nor keep other entries open."""
    try:
        stores.close()
    except Exception as exc:  # noqa: BLE001 - see above
        log.warning("closing cached task stores %s failed: %s", stores.paths(), exc)


def _identities(stores: TaskStores) -> tuple[Optional[bytes], ...]:
    return tuple(db_identity(path) for path in stores.paths())


def _inodes(stores: TaskStores) -> tuple[Optional[tuple[int, int]], ...]:
    """Which directories the databases are in (a stat each: cheap enough for every poll)."""
    found = []
    for path in stores.paths():
        try:
            info = os.stat(path)
            found.append((info.st_dev, info.st_ino))
        except FileNotFoundError:
            found.append(None)
    return tuple(found)


#: The process's cache (one per Python worker).
STORE_CACHE = StoreCache(lease=float(os.environ.get("STREAMLIB_STORE_LEASE", DEFAULT_LEASE)))
atexit.register(STORE_CACHE.shutdown)


def release_everywhere(state_dir: str, timeout: float = 10.0) -> bool:
    """Ask every process that keeps task stores under ``state_dir`` (an application's
    state directory: one sub-directory per task) open to close them, and wait until
    their RocksDB LOCKs are free (up to ``timeout`` s); True if they all are.

    For the driver when an application stops: afterwards the state may be deleted
    (``Streams.cleanup``), reset or opened by other tools. It must not be called by a
    process that holds one of these stores open outside the cache (a POSIX lock is
    dropped when its process closes any descriptor of the file): this process's own
    cached entries under ``state_dir`` are therefore closed first.
    """
    STORE_CACHE.close_under(state_dir)
    if not os.path.isdir(state_dir):
        return True
    task_dirs = [entry.path for entry in os.scandir(state_dir) if entry.is_dir()]
    for task_dir in task_dirs:
        ask_to_release(task_dir)
    locks = [os.path.join(entry.path, "LOCK") for task_dir in task_dirs
             for entry in os.scandir(task_dir) if entry.is_dir()]
    deadline = time.monotonic() + timeout
    try:
        while True:
            held = [lock for lock in locks if lock_held_elsewhere(lock)]
            if not held:
                return True
            if time.monotonic() >= deadline:
                return False
            locks = held
            time.sleep(POLL_INTERVAL)
    finally:
        for task_dir in task_dirs:
            withdraw_release_request(task_dir)
