"""Python objects carried in a data source option (a string) from the driver to readers.

Spark hands a Python data source its options as strings, to the driver's source runner
and, pickled with the reader, to every read task: what ``Streams`` gives the reader
(serdes, windows, a stage's function) travels as base64 text of its cloudpickle.
"""
from __future__ import annotations

import base64
import pickle
from typing import Any


def encode(value: Any) -> str:
    """``value`` as option text (cloudpickle: functions of the user's ``__main__`` go by value).

    >>> decode(encode({"a": 1}))
    {'a': 1}
    """
    from streamlib.spark.internals import cloudpickle

    return base64.b64encode(cloudpickle().dumps(value)).decode("ascii")


def decode(text: str) -> Any:
    """The object :func:`encode` made ``text`` of. Anew in every task that needs it: an
    accumulator in it counts only in the Spark task that unpickled it (a Python worker
    forgets its accumulators when its next task starts)."""
    return pickle.loads(base64.b64decode(text))
