"""Sliding, session and join windows, and the emit strategy (Kafka's definitions, snake_case)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..time import Duration, to_millis
from ._durations import signed_millis


def _check_grace(grace_ms: int) -> None:
    if grace_ms < 0:
        raise ValueError(f"Grace period must not be negative, got {grace_ms} ms")


@dataclass(frozen=True, slots=True)
class SlidingWindows:
    """Windows of ``time_difference`` that slide with the records (Kafka's ``SlidingWindows``).

    Two records fall in a common window when their timestamps differ by at most
    ``time_difference``; each window is ``[start, start + time_difference]``,
    both ends inclusive, and is only created where records make it distinct.

    Examples
    --------
    >>> w = SlidingWindows.of(10, grace=3)
    >>> (w.time_difference_ms, w.grace_ms, w.retention_ms)
    (10, 3, 23)
    """

    time_difference_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.time_difference_ms <= 0:
            # Kafka accepts 0 and then fails on the first record ("Window endMs must be
            # greater than window startMs"): a window [t, t] has no room to slide
            raise ValueError("SlidingWindows: the time difference must be positive (a window is "
                             "[start, start + time difference] and must end after it starts), got "
                             f"{self.time_difference_ms} ms")
        _check_grace(self.grace_ms)

    @classmethod
    def of(cls, time_difference: Duration, grace: Duration = 0) -> SlidingWindows:
        """Sliding windows of ``time_difference``, accepting records up to ``grace`` late."""
        return cls(to_millis(time_difference, "time_difference"), to_millis(grace, "grace"))

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: Duration) -> SlidingWindows:
        """Kafka's ``SlidingWindows.ofTimeDifferenceWithNoGrace``."""
        return cls.of(time_difference)

    @classmethod
    def of_time_difference_and_grace(cls, time_difference: Duration, grace: Duration) -> SlidingWindows:
        """Kafka's ``SlidingWindows.ofTimeDifferenceAndGrace``."""
        return cls.of(time_difference, grace)

    @property
    def retention_ms(self) -> int:
        """Default store retention, ``2 * time_difference + grace``: creating a record's
        right window may read windows that start as early as ``timestamp - 2 * time_difference``
        (Kafka's ``SlidingWindowStoreMaterializer``)."""
        return 2 * self.time_difference_ms + self.grace_ms


@dataclass(frozen=True, slots=True)
class SessionWindows:
    """Sessions of activity separated by at least ``gap`` of inactivity (Kafka's ``SessionWindows``).

    A session window spans ``[first, last]`` record timestamp, both inclusive;
    records within ``gap`` of a session join (and may merge) sessions.

    Examples
    --------
    >>> w = SessionWindows.with_inactivity_gap(5, grace=2)
    >>> (w.gap_ms, w.grace_ms, w.retention_ms)
    (5, 2, 7)
    """

    gap_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.gap_ms <= 0:
            raise ValueError(f"Gap time cannot be zero or negative, got {self.gap_ms} ms")
        _check_grace(self.grace_ms)

    @classmethod
    def with_inactivity_gap(cls, gap: Duration, grace: Duration = 0) -> SessionWindows:
        """Sessions closed by ``gap`` of inactivity, accepting records up to ``grace`` late."""
        return cls(to_millis(gap, "inactivity gap"), to_millis(grace, "grace"))

    @classmethod
    def of_inactivity_gap_with_no_grace(cls, gap: Duration) -> SessionWindows:
        """Kafka's ``SessionWindows.ofInactivityGapWithNoGrace``."""
        return cls.with_inactivity_gap(gap)

    @classmethod
    def of_inactivity_gap_and_grace(cls, gap: Duration, grace: Duration) -> SessionWindows:
        """Kafka's ``SessionWindows.ofInactivityGapAndGrace``."""
        return cls.with_inactivity_gap(gap, grace)

    @property
    def retention_ms(self) -> int:
        """Default session store retention: ``gap + grace`` (Kafka's ``SessionStoreMaterializer``)."""
        return self.gap_ms + self.grace_ms


@dataclass(frozen=True, slots=True)
class JoinWindows:
    """How far apart two records may be to join in a stream-stream join (Kafka's ``JoinWindows``).

    A record at ``t`` on the left joins right records in ``[t - before, t + after]``.
    ``before``/``after`` may be negative as long as ``before + after >= 0``.

    Examples
    --------
    >>> w = JoinWindows.of_time_difference(10, grace=2).after(3)
    >>> (w.before_ms, w.after_ms, w.grace_ms, w.size_ms, w.retention_ms)
    (10, 3, 2, 13, 15)
    """

    before_ms: int
    after_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.before_ms + self.after_ms < 0:
            raise ValueError("Window interval (ie, before_ms + after_ms) must not be negative, got "
                             f"before_ms={self.before_ms} after_ms={self.after_ms}")
        _check_grace(self.grace_ms)

    @classmethod
    def of_time_difference(cls, time_difference: Duration, grace: Duration = 0) -> JoinWindows:
        """Join records at most ``time_difference`` apart, either way, up to ``grace`` late."""
        difference = to_millis(time_difference, "time_difference")
        return cls(difference, difference, to_millis(grace, "grace"))

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: Duration) -> JoinWindows:
        """Kafka's ``JoinWindows.ofTimeDifferenceWithNoGrace``."""
        return cls.of_time_difference(time_difference)

    @classmethod
    def of_time_difference_and_grace(cls, time_difference: Duration, grace: Duration) -> JoinWindows:
        """Kafka's ``JoinWindows.ofTimeDifferenceAndGrace``."""
        return cls.of_time_difference(time_difference, grace)

    def before(self, time_difference: Duration) -> JoinWindows:
        """The same windows reaching ``time_difference`` back (may be negative); grace unchanged."""
        return dataclasses.replace(self, before_ms=signed_millis(time_difference, "before"))

    def after(self, time_difference: Duration) -> JoinWindows:
        """The same windows reaching ``time_difference`` forward (may be negative); grace unchanged."""
        return dataclasses.replace(self, after_ms=signed_millis(time_difference, "after"))

    @property
    def size_ms(self) -> int:
        """``before + after`` (Kafka's ``JoinWindows.size()``): the join stores' window size."""
        return self.before_ms + self.after_ms

    @property
    def retention_ms(self) -> int:
        """The join stores' retention, ``size + grace`` (Kafka's ``KStreamImplJoin``)."""
        return self.size_ms + self.grace_ms


@dataclass(frozen=True, slots=True)
class EmitStrategy:
    """When a windowed aggregation emits (KIP-825): on every update, or once when a window closes.

    Examples
    --------
    >>> EmitStrategy.on_window_close().is_on_window_close
    True
    >>> EmitStrategy.on_window_update() == EmitStrategy.on_window_update()
    True
    """

    ON_WINDOW_UPDATE = "on_window_update"
    ON_WINDOW_CLOSE = "on_window_close"

    type: str

    def __post_init__(self) -> None:
        if self.type not in (self.ON_WINDOW_UPDATE, self.ON_WINDOW_CLOSE):
            raise ValueError(f"unknown emit strategy {self.type!r}; use EmitStrategy.on_window_update() "
                             "or EmitStrategy.on_window_close()")

    @classmethod
    def on_window_update(cls) -> EmitStrategy:
        """Emit each window's new value whenever it changes (the default)."""
        return cls(cls.ON_WINDOW_UPDATE)

    @classmethod
    def on_window_close(cls) -> EmitStrategy:
        """Emit each window's final value once, when stream time passes its end plus grace."""
        return cls(cls.ON_WINDOW_CLOSE)

    @property
    def is_on_window_close(self) -> bool:
        return self.type == self.ON_WINDOW_CLOSE

    def __repr__(self) -> str:
        return f"EmitStrategy.{self.type}()"
