"""streamlib's own exceptions, and the way back to them from a failed Spark query.

Errors raised inside Spark tasks or the data source reach the driver as text inside a
multi-kilobyte ``StreamingQueryException``. :func:`translate` finds the streamlib
error in that text and rebuilds it, so callers of ``process_available()`` and
``await_termination()`` catch ``DeserializationFailure``, ``ProcessingError``, ... with a
short message; the Spark exception stays chained underneath (``raise ... from``).
"""
from __future__ import annotations

import logging
import os
import re
import sys
import traceback
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
            error.from_spark = True
            _short_uncaught_errors()
            return error
    return None


def _short_uncaught_errors() -> None:
    """Have an uncaught streamlib error that came out of a failed Spark query printed
    without Spark's report (its ``__cause__``, hundreds of lines that repeat the
    message): one error, once. The cause stays on the exception for code that wants it,
    and is printed too when the ``streamlib`` logger is enabled for DEBUG."""
    if getattr(sys.excepthook, "streamlib", False):
        return
    previous = sys.excepthook

    def hook(kind, error, tb):
        if not getattr(error, "from_spark", False) or logging.getLogger("streamlib").isEnabledFor(logging.DEBUG):
            return previous(kind, error, tb)
        lines = traceback.format_exception(kind, error, tb, chain=False)
        sys.stderr.write("".join(lines))
        sys.stderr.write(f"(Spark's report of this failure is the exception's __cause__, a "
                         f"{type(error.__cause__).__name__}; logging the 'streamlib' logger at DEBUG prints it)\n")

    hook.streamlib = True  # type: ignore[attr-defined]
    sys.excepthook = hook
