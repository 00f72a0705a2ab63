"""Timers (Kafka Streams' punctuation): callbacks a processor schedules on its task's
stream time or on the wall clock.

Stream-time timers fire when the task's stream time reaches them: after a record
advanced it, or when the runtime advances every task to the application's stream
time at a batch boundary. Wall-clock timers fire at batch boundaries (under Spark,
once per micro-batch; under ``TopologyTestDriver``, on ``advance_wall_clock_time``).
A timer fires once per advance however far time jumped, with the time it fired at,
and is then due at the next multiple of its interval after that time, counted from
where it started (Kafka's ``PunctuationSchedule.next``): a stream-time timer starts at
0 and so fires at the first record, a wall-clock timer ``interval`` after it was
scheduled.
"""
from __future__ import annotations

from typing import Callable, Optional

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

    def next_due(self, now: int) -> int:
        """When the timer is due again after firing at ``now`` (Kafka's rule: the
        intervals it missed are skipped, not fired one by one).

        >>> t = Timer(10, STREAM_TIME, print, 0)
        >>> t.next_due(42), Timer(10, WALL_CLOCK_TIME, print, 10).next_due(14)
        (50, 20)
        """
        return self.due + ((now - self.due) // self.interval + 1) * self.interval


def first_due(interval: int, kind: str, now: int) -> int:
    """Where a new timer starts: stream time at 0 (it fires once the task has seen a
    record), the wall clock ``interval`` after ``now`` (Kafka's ``schedule``)."""
    return 0 if kind == STREAM_TIME else max(now, 0) + interval


class Timers:
    """The timers of one task."""

    def __init__(self) -> None:
        self._timers: dict[str, list[Timer]] = {STREAM_TIME: [], WALL_CLOCK_TIME: []}
        #: the earliest stream time any stream-time timer is due at (a cheap per-record check)
        self.next_stream_due = float("inf")

    def schedule(self, interval: int, kind: str, callback: Callable[[int], None], now: int,
                 due: Optional[int] = None) -> Timer:
        """Call ``callback(time)`` every ``interval`` ms of ``kind`` time; the first time
        at ``due`` (a time restored from an earlier batch), else as :func:`first_due`."""
        if kind not in self._timers:
            raise ValueError(f"timer kind must be {STREAM_TIME!r} or {WALL_CLOCK_TIME!r}, got {kind!r}")
        if interval < 1:
            raise ValueError(f"a timer's interval must be at least 1 ms, got {interval}")
        timer = Timer(interval, kind, callback, first_due(interval, kind, now) if due is None else due)
        self._timers[kind].append(timer)
        if kind == STREAM_TIME:
            self.next_stream_due = min(self.next_stream_due, timer.due)
        return timer

    def fire(self, kind: str, now: int) -> None:
        """Fire every timer of ``kind`` due at ``now``, earliest due first (Kafka's
        punctuation queue), each once."""
        timers = self._timers[kind]
        timers[:] = [t for t in timers if not t.cancelled]
        for timer in sorted((t for t in timers if t.due <= now), key=lambda t: t.due):
            if not timer.cancelled:
                timer.due = timer.next_due(now)
                timer.callback(now)
        if kind == STREAM_TIME:
            self.next_stream_due = min((t.due for t in timers if not t.cancelled), default=float("inf"))
