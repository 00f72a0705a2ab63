"""Timers (Kafka Streams' punctuation): callbacks a processor schedules on its task's
stream time or on the wall clock.

Stream-time timers fire when the task's stream time reaches them: after a record
advanced it, or when the runtime advances every task to the application's stream
time at a batch boundary. Wall-clock timers fire at batch boundaries (under Spark,
once per micro-batch; under ``TopologyTestDriver``, on ``advance_wall_clock_time``).
A timer fires once per advance however far time jumped, with the time it fired at,
then is due again ``interval`` later (Kafka's rule).
"""
from __future__ import annotations

from typing import Callable

STREAM_TIME = "stream_time"
WALL_CLOCK_TIME = "wall_clock_time"


class Timer:
    """A scheduled callback; :meth:`cancel` stops it."""

    __slots__ = ("interval", "kind", "callback", "due", "cancelled")

    def __init__(self, interval: int, kind: str, callback: Callable[[int], None], due: int):
        self.interval = interval
        self.kind = kind
        self.callback = callback
        self.due = due
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timers:
    """The timers of one task."""

    def __init__(self) -> None:
        self._timers: dict[str, list[Timer]] = {STREAM_TIME: [], WALL_CLOCK_TIME: []}
        #: the earliest stream time any stream-time timer is due at (a cheap per-record check)
        self.next_stream_due = float("inf")

    def schedule(self, interval: int, kind: str, callback: Callable[[int], None], now: int) -> Timer:
        """Call ``callback(time)`` every ``interval`` ms of ``kind`` time from ``now`` on."""
        if kind not in self._timers:
            raise ValueError(f"timer kind must be {STREAM_TIME!r} or {WALL_CLOCK_TIME!r}, got {kind!r}")
        if interval < 1:
            raise ValueError(f"a timer's interval must be at least 1 ms, got {interval}")
        timer = Timer(interval, kind, callback, max(now, 0) + interval)
        self._timers[kind].append(timer)
        if kind == STREAM_TIME:
            self.next_stream_due = min(self.next_stream_due, timer.due)
        return timer

    def fire(self, kind: str, now: int) -> None:
        """Fire every timer of ``kind`` due at ``now``."""
        timers = self._timers[kind]
        timers[:] = [t for t in timers if not t.cancelled]
        for timer in list(timers):
            if not timer.cancelled and timer.due <= now:
                timer.due = now + timer.interval
                timer.callback(now)
        if kind == STREAM_TIME:
            self.next_stream_due = min((t.due for t in timers if not t.cancelled), default=float("inf"))
