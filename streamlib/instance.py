"""One running instance per application: a lock over its checkpoint and state.

Two processes running the same application would both write its stores, changelogs
and sinks and both advance its checkpoint: counts come out wrong without a word. The
driver therefore holds ``fcntl.flock`` on a lock file beside the checkpoint and one
beside the state directory for as long as the application runs. The kernel drops
the locks when the holder dies, kill -9 included, so a lock is never stale; the file
keeps the holder's pid and host only to name it in the error.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from typing import Optional, Sequence

from .config import StreamsConfig
from .errors import ApplicationAlreadyRunning


def lock_paths(config: StreamsConfig) -> list[str]:
    """The lock files of an application: beside its checkpoint and its state directory
    (outside both, so ``cleanup()`` and ``reset`` leave the lock in place)."""
    return [config.resolved_checkpoint_location().rstrip(os.sep) + ".lock",
            config.application_state_dir.rstrip(os.sep) + ".lock"]


class ApplicationLock:
    """Exclusive, non-blocking locks on ``paths``, held until :meth:`release`.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "app.lock")
    >>> first = ApplicationLock("app", [path]); first.acquire()
    >>> ApplicationLock("app", [path]).acquire()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    streamlib.errors.ApplicationAlreadyRunning: application 'app' is already running (pid ...
    >>> first.release()
    """

    def __init__(self, application_id: str, paths: Sequence[str]):
        self.application_id = application_id
        self.paths = list(dict.fromkeys(paths))
        self._fds: list[int] = []

    @classmethod
    def of(cls, config: StreamsConfig) -> "ApplicationLock":
        return cls(config.application_id, lock_paths(config))

    @property
    def held(self) -> bool:
        return bool(self._fds)

    def acquire(self) -> None:
        """Take every lock at once or none; raise :class:`ApplicationAlreadyRunning`
        naming the holder if another process (or another ``Streams`` here) has one."""
        if self._fds:
            return
        try:
            for path in self.paths:
                os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    holder = _holder(fd)
                    os.close(fd)
                    raise ApplicationAlreadyRunning(
                        f"application {self.application_id!r} is already running ({holder}; lock {path}); "
                        "stop it first, or give this instance another application_id") from None
                self._fds.append(fd)
        except BaseException:
            self.release()
            raise
        me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": int(time.time())})
        for fd in self._fds:
            os.ftruncate(fd, 0)
            os.pwrite(fd, me.encode(), 0)

    def release(self) -> None:
        """Drop the locks (the files stay: removing them would race with a new holder)."""
        fds, self._fds = self._fds, []
        for fd in fds:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> "ApplicationLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _holder(fd: int) -> str:
    try:
        info: Optional[dict] = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:
        info = None
    if not info or "pid" not in info:
        return "holder unknown"
    return f"pid {info['pid']} on {info.get('host', '?')}"
