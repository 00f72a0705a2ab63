"""streamlib's own exceptions, at the bottom of the layers: this module imports nothing
of streamlib. A failed Spark query is turned back into them by
:func:`streamlib.spark.query_errors.translate`.
"""
from __future__ import annotations

import os
from types import TracebackType
from typing import Optional

#: Names the way out of states only a reset can leave.
RESET_HINT = "python -m streamlib reset --application-id {app}"


class StreamlibError(Exception):
    """Base of the errors streamlib raises about an application and its data."""


class ConfigurationError(StreamlibError):
    """A ``StreamsConfig`` setting cannot work (e.g. a state directory that cannot be written)."""


class ApplicationAlreadyRunning(StreamlibError):
    """Another process runs the same application (same checkpoint or state directory)."""


class PartitionCountMismatch(StreamlibError):
    """A store's changelog topic has another partition count than the application's tasks."""


class OffsetOutOfRange(StreamlibError):
    """The checkpoint's offset of a partition is beyond the end of its log."""


class ChangelogMissing(StreamlibError):
    """A store's changelog topic vanished while the application still has progress."""


class ChangelogConfigMismatch(StreamlibError):
    """A store's changelog topic exists with other configs than its ``Materialized`` asks."""


class ChangelogLost(StreamlibError):
    """A store's changelog no longer holds records that committed batches wrote, and the
    copy being restored does not hold them either: restoring would lose them silently."""


class StoreWriteFailed(StreamlibError):
    """A store's local RocksDB copy refused a write (a full disk, a read-only file system);
    nothing of that write is applied."""


class LogDiverged(OffsetOutOfRange):
    """A partition's log no longer holds what a checkpoint (or a store copy) read from it,
    and where it diverged cannot be read again exactly."""


def one_line(text: str, limit: int = 500) -> str:
    """``text`` on one line, at most ``limit`` characters (messages must survive being
    parsed back out of a Python traceback, which :func:`streamlib.spark.query_errors.translate` reads line by line).

    >>> one_line("a\\n  b")
    'a b'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_frame(tb: Optional[TracebackType]) -> Optional[str]:
    """Where the user's own code raised, as ``file.py:12 in parse``: the innermost frame
    of a traceback outside streamlib (and outside Python's and PySpark's own modules,
    which a user function may call into), ``None`` if there is none.

    >>> def parse(v):
    ...     return int(v)
    >>> try:
    ...     parse("x")
    ... except ValueError as exc:
    ...     user_frame(exc.__traceback__)  # doctest: +ELLIPSIS
    '<doctest ...>:2 in parse'
    """
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        path = os.path.abspath(code.co_filename) if not code.co_filename.startswith("<") else code.co_filename
        if not path.startswith(_PACKAGE_DIR) and not _library(path):
            found = f"{os.path.basename(code.co_filename) if not path.startswith('<') else path}:" \
                    f"{tb.tb_lineno} in {code.co_name}"
        tb = tb.tb_next
    return found


def _library(path: str) -> bool:
    """Whether ``path`` is an installed library (site-packages) or the standard library."""
    return (f"{os.sep}site-packages{os.sep}" in path or f"{os.sep}pyspark{os.sep}" in path
            or path.startswith(os.path.dirname(os.__file__) + os.sep))
