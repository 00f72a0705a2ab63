"""The way back to streamlib's own exceptions from a failed Spark query.

Errors raised inside Spark tasks or the data source reach the driver as text inside a
multi-kilobyte ``StreamingQueryException``. :func:`translate` finds the streamlib
error in that text and rebuilds it, so callers of ``process_available()`` and
``await_termination()`` catch ``DeserializationFailure``, ``ProcessingError``, ... with a
short message; the Spark exception stays chained underneath (``raise ... from``).

It lives here, above every other layer, because it must know every error class
(processors' and topics' included); :mod:`streamlib.errors` stays at the bottom.
"""
from __future__ import annotations

import logging
import re
import sys
import traceback
from typing import Optional

from streamlib.errors import StreamlibError
from streamlib.processors.base import ProcessingError  # noqa: F401  (registers the subclasses)
from streamlib.processors.io import DeserializationFailure  # noqa: F401
from streamlib.topics.base import InvalidTimestamp, RecordTooLarge


def _error_classes() -> dict[str, type]:
    """Every streamlib error class by name (processing errors included)."""
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
