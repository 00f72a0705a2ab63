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

import re
from typing import Optional

from streamlib.errors import StreamlibError
from streamlib.processors.base import ProcessingError  # noqa: F401  (registers the subclasses)
from streamlib.processors.io import DeserializationFailure  # noqa: F401
from streamlib.topics.base import RecordTooLarge


def _error_classes() -> dict[str, type]:
    """Every streamlib error class by name (processing errors included)."""
    found: dict[str, type] = {"RecordTooLarge": RecordTooLarge}
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
