"""Tumbling and hopping windows (Kafka's ``TimeWindows``) and their vectorised assignment."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..time import Duration, to_millis
from ..windowed import Window


@dataclass(frozen=True, slots=True)
class TimeWindows:
    """Fixed-size windows ``[start, start + size)`` every ``advance`` ms, from epoch 0.

    Tumbling when ``advance == size`` (the default), hopping when ``advance < size``.
    A window closes when stream time reaches ``end + grace``; later records for it
    are dropped. Build with :meth:`of`, then optionally :meth:`advance_by`.

    Examples
    --------
    >>> w = TimeWindows.of(10, grace=5).advance_by(5)
    >>> (w.size_ms, w.advance_ms, w.grace_ms, w.retention_ms)
    (10, 5, 5, 15)
    >>> w.windows_for(12)
    [Window(5, 15), Window(10, 20)]
    """

    size_ms: int
    advance_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.size_ms <= 0:
            raise ValueError(f"Window size (size_ms) must be larger than zero, got {self.size_ms} ms")
        if self.advance_ms <= 0 or self.advance_ms > self.size_ms:
            raise ValueError(
                "Window advancement interval should be more than zero and no more than the window "
                f"size, which is {self.size_ms} ms, but given advancement interval is: {self.advance_ms} ms")
        if self.grace_ms < 0:
            raise ValueError(f"Grace period must not be negative, got {self.grace_ms} ms")

    @classmethod
    def of(cls, size: Duration, grace: Duration = 0) -> TimeWindows:
        """Tumbling windows of ``size``, accepting records up to ``grace`` after a window's end."""
        return cls(to_millis(size, "size"), to_millis(size, "size"), to_millis(grace, "grace"))

    @classmethod
    def of_size_with_no_grace(cls, size: Duration) -> TimeWindows:
        """Kafka's ``TimeWindows.ofSizeWithNoGrace``."""
        return cls.of(size)

    @classmethod
    def of_size_and_grace(cls, size: Duration, grace: Duration) -> TimeWindows:
        """Kafka's ``TimeWindows.ofSizeAndGrace``."""
        return cls.of(size, grace)

    def advance_by(self, advance: Duration) -> TimeWindows:
        """Hopping windows: a new window starts every ``advance`` (``0 < advance <= size``)."""
        return dataclasses.replace(self, advance_ms=to_millis(advance, "advance"))

    @property
    def retention_ms(self) -> int:
        """How long a window store keeps a window by default: ``size + grace`` (Kafka's)."""
        return self.size_ms + self.grace_ms

    def window_at(self, start: int) -> Window:
        """The window starting at ``start``."""
        return Window(start, start + self.size_ms)

    def windows_for(self, timestamp: int) -> list[Window]:
        """The windows a record at ``timestamp`` belongs to, by ascending start.

        Exactly Kafka's ``TimeWindows.windowsFor``: every ``[start, start + size)``
        with ``start % advance == 0`` and ``0 <= start <= timestamp < start + size``,
        in the order Kafka's window aggregation updates them.
        """
        start = (max(0, timestamp - self.size_ms + self.advance_ms) // self.advance_ms) * self.advance_ms
        return [self.window_at(s) for s in range(start, timestamp + 1, self.advance_ms)]

    def assign(self, timestamps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised :meth:`windows_for` over many records.

        Returns ``(row_index, starts)``, two int64 arrays of equal length: row
        ``row_index[i]`` of ``timestamps`` belongs to the window starting at
        ``starts[i]``. Rows keep their order, and each row's windows come in
        :meth:`windows_for` order (ascending start); a negative timestamp gets none.

        Examples
        --------
        >>> rows, starts = TimeWindows.of(10).advance_by(5).assign(np.array([3, 12]))
        >>> rows.tolist(), starts.tolist()
        ([0, 1, 1], [0, 5, 10])
        """
        ts = np.asarray(timestamps, dtype=np.int64)
        size, advance = np.int64(self.size_ms), np.int64(self.advance_ms)
        first = (np.maximum(ts - size + advance, 0) // advance) * advance
        counts = np.maximum((ts - first) // advance + 1, 0)
        row_index = np.repeat(np.arange(len(ts), dtype=np.int64), counts)
        # Position of each output row within its input row's run of windows.
        run_starts = np.cumsum(counts) - counts
        within = np.arange(len(row_index), dtype=np.int64) - np.repeat(run_starts, counts)
        return row_index, np.repeat(first, counts) + within * advance

    def __repr__(self) -> str:
        return f"TimeWindows(size_ms={self.size_ms}, advance_ms={self.advance_ms}, grace_ms={self.grace_ms})"
