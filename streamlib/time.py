"""Durations and timestamps: everything is ``int`` epoch milliseconds inside streamlib."""
from __future__ import annotations

import time as _time
from datetime import timedelta
from typing import Union

Duration = Union[timedelta, int]


def to_millis(duration: Duration, what: str = "duration") -> int:
    """``timedelta`` or int milliseconds -> int milliseconds (never negative)."""
    if isinstance(duration, timedelta):
        millis = duration // timedelta(milliseconds=1)
    elif isinstance(duration, int) and not isinstance(duration, bool):
        millis = duration
    else:
        raise TypeError(f"{what} must be a timedelta or int milliseconds, got {duration!r}")
    if millis < 0:
        raise ValueError(f"{what} must not be negative, got {millis} ms")
    return millis


def now_millis() -> int:
    return _time.time_ns() // 1_000_000
