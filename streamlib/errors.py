"""streamlib's own exceptions, and the way back to them from a failed Spark query.

Errors raised inside Spark tasks or the data source reach the driver as text inside a
multi-kilobyte ``StreamingQueryException``. :func:`translate` finds the streamlib
error in that text and rebuilds it, so callers of ``process_available()`` and
``await_termination()`` catch ``DeserializationFailure``, ``ProcessingError``, ... with a
short message; the Spark exception stays chained underneath (``raise ... from``).
"""
from __future__ import annotations

import re
from typing import Optional

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


class ChangelogConfigMismatch(StreamlibError):
    """A store's changelog topic exists with other configs than its ``Materialized`` asks."""


class LogDiverged(OffsetOutOfRange):
    """A partition's log no longer holds what a checkpoint (or a store copy) read from it,
    and where it diverged cannot be read again exactly."""


def one_line(text: str, limit: int = 500) -> str:
    """``text`` on one line, at most ``limit`` characters (messages must survive being
    parsed back out of a Python traceback, which :func:`translate` reads line by line).

    >>> one_line("a\\n  b")
    'a b'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def _error_classes() -> dict[str, type]:
    """Every streamlib error class by name (processing errors included)."""
    from .processors.base import ProcessingError  # noqa: F401  (registers the subclasses)
    from .processors.io import DeserializationFailure  # noqa: F401
    from .topics.base import InvalidTimestamp, RecordTooLarge

    found: dict[str, type] = {"RecordTooLarge": RecordTooLarge, "InvalidTimestamp": InvalidTimestamp}
    todo = [StreamlibError]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return found


_RAISED = re.compile(r"^(?:[\w.]*\.)?(\w+): (.+)$", re.MULTILINE)


def translate(exc: BaseException) -> Optional[Exception]:
    """The streamlib error a failed Spark query carries in its text, or ``None``.

    The innermost streamlib error wins (Python prints a chain cause first, Spark's
    wrappers come after it)."""
    if isinstance(exc, StreamlibError) or type(exc).__module__.startswith("streamlib."):
        return None
    classes = _error_classes()
    text = str(exc)
    for attr in ("desc", "stackTrace"):
        extra = getattr(exc, attr, None)
        if isinstance(extra, str):
            text += "\n" + extra
    for match in _RAISED.finditer(text):
        cls = classes.get(match.group(1))
        if cls is not None:
            error = cls.__new__(cls)
            Exception.__init__(error, match.group(2).strip())
            error.record = error.node = None  # what ProcessingError's constructor sets
            return error
    return None
