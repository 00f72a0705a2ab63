"""streamlib's own exceptions, at the bottom of the layers: this module imports nothing
of streamlib. A failed Spark query is turned back into them by
:func:`streamlib.spark.query_errors.translate`.
"""
from __future__ import annotations

#: Names the way out of states only a reset can leave.
RESET_HINT = "python -m streamlib reset --application-id {app}"


class StreamlibError(Exception):
    """Base of the errors streamlib raises about an application and its data."""


class ApplicationAlreadyRunning(StreamlibError):
    """Another process runs the same application (same checkpoint or state directory)."""


class PartitionCountMismatch(StreamlibError):
    """A store's changelog topic has another partition count than the application's tasks."""


class OffsetOutOfRange(StreamlibError):
    """The checkpoint's offset of a partition is beyond the end of its log."""


class ChangelogMissing(StreamlibError):
    """A store's changelog topic vanished while the application still has progress."""


def one_line(text: str, limit: int = 500) -> str:
    """``text`` on one line, at most ``limit`` characters (messages must survive being
    parsed back out of a Python traceback, which :func:`streamlib.spark.query_errors.translate` reads line by line).

    >>> one_line("a\\n  b")
    'a b'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."
