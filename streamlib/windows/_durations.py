"""Duration arguments of window definitions: ``timedelta`` or int ms, like everywhere in streamlib."""
from __future__ import annotations

from datetime import timedelta

from ..time import Duration, to_millis


def signed_millis(duration: Duration, what: str) -> int:
    """Like :func:`streamlib.time.to_millis` but negative durations are allowed.

    ``JoinWindows.before``/``after`` take negative differences (Kafka's
    ``before(ofMillis(-5))`` moves the window start after the record).
    """
    negative = (duration < timedelta(0)) if isinstance(duration, timedelta) else (
        isinstance(duration, int) and not isinstance(duration, bool) and duration < 0)
    return -to_millis(-duration, what) if negative else to_millis(duration, what)
