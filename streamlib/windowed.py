"""``Window`` (a time interval in ms) and ``Windowed`` (a key in a window): the keys of windowed tables."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

K = TypeVar("K")

#: Kafka's ``Long.MAX_VALUE``: window ends that would overflow are capped here (WindowKeySchema).
MAX_TIMESTAMP = (1 << 63) - 1


@dataclass(frozen=True, order=True, slots=True)
class Window:
    """A window ``[start, end]`` in epoch milliseconds, ordered by ``(start, end)``.

    One class for every window kind (Kafka has ``TimeWindow``/``SessionWindow``);
    the kind decides whether ``end`` is inclusive: time windows are ``[start, end)``,
    session and sliding windows ``[start, end]`` (see :meth:`overlaps_time`,
    :meth:`overlaps_session`). As in Kafka, ``start >= 0`` and ``end >= start``.

    Examples
    --------
    >>> Window(0, 10) < Window(5, 15)
    True
    >>> Window(0, 10).overlaps_time(Window(10, 20))
    False
    """

    start: int
    end: int

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"Window {name} must be int milliseconds, got {value!r}")
        if self.start < 0:
            raise ValueError(f"Window start time cannot be negative, got {self.start}")
        if self.end < self.start:
            raise ValueError(f"Window end time cannot be smaller than window start time, "
                             f"got start={self.start} end={self.end}")

    def overlaps_time(self, other: Window) -> bool:
        """Whether two half-open time windows ``[start, end)`` overlap (Kafka's ``TimeWindow.overlap``)."""
        return self.start < other.end and other.start < self.end

    def overlaps_session(self, other: Window) -> bool:
        """Whether two closed session windows ``[start, end]`` overlap (Kafka's ``SessionWindow.overlap``)."""
        return self.start <= other.end and other.start <= self.end

    def __repr__(self) -> str:
        return f"Window({self.start}, {self.end})"


@dataclass(frozen=True, slots=True)
class Windowed(Generic[K]):
    """A key together with the window it was aggregated in (Kafka's ``Windowed<K>``).

    Examples
    --------
    >>> w = Windowed("a", Window(0, 10))
    >>> (w.key, w.window.start, w.window.end)
    ('a', 0, 10)
    """

    key: Any
    window: Window

    def __post_init__(self) -> None:
        if not isinstance(self.window, Window):
            raise TypeError(f"Windowed window must be a Window, got {self.window!r}")

    def __repr__(self) -> str:
        return f"Windowed({self.key!r}, {self.window!r})"
