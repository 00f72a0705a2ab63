"""Fsyncs of the local log's files, now or deferred to the end of a block: a task's
changelog and sink appends of one batch become durable in one concurrent round."""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator, Optional

#: Per thread: the segment files whose fsync is deferred (None: fsync at every append).
_deferred = threading.local()


@contextmanager
def deferred_fsyncs() -> Iterator[None]:
    """Appends of this thread inside skip their fsync; on exit every segment file they
    wrote is fsynced, concurrently, before the block is left (a task's changelog and
    sink appends of one batch: one round of fsyncs instead of one fsync after another).

    A process crash loses nothing either way (the data is in the page cache); against
    power loss the whole block is durable when it returns, which is when a task
    reports its batch done. Nested blocks sync at the outermost exit.
    """
    if getattr(_deferred, "paths", None) is not None:
        yield
        return
    _deferred.paths = paths = set()
    try:
        yield
    finally:
        _deferred.paths = None
        _fsync_all(sorted(paths))


def _fsync_all(paths: list[str]) -> None:
    errors: list[BaseException] = []

    def sync(path: str) -> None:
        try:
            fsync_path(path)
        except FileNotFoundError:
            pass  # replaced by a compaction (which synced its copy) or deleted with its topic
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    if len(paths) <= 1:
        for path in paths:
            sync(path)
    else:
        list(_sync_pool().map(sync, paths))
    if errors:
        raise errors[0]


_pool: Optional[ThreadPoolExecutor] = None
_pool_pid = -1


def _sync_pool() -> ThreadPoolExecutor:
    """Threads that fsync concurrently, made once per process (after a fork: again)."""
    global _pool, _pool_pid
    if _pool is None or _pool_pid != os.getpid():
        _pool, _pool_pid = ThreadPoolExecutor(max_workers=8, thread_name_prefix="streamlib-fsync"), os.getpid()
    return _pool


def fsync_now_or_later(fd: int, path: str) -> None:
    """Fsync the open file ``fd`` now, or, inside :func:`deferred_fsyncs` on this
    thread, note ``path`` for the block's round of fsyncs."""
    pending = getattr(_deferred, "paths", None)
    if pending is None:
        os.fsync(fd)
    else:
        pending.add(path)


def fsync_path(path: str, flags: int = os.O_RDONLY) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
