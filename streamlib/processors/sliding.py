"""Sliding-window aggregation (Kafka Streams' ``KStreamSlidingWindowAggregate``).

Windows are ``[start, start + time_difference]``, both ends inclusive, and exist only
where records are: each record has a left window ending at its timestamp and, when a
later record falls within ``time_difference`` of it, a right window starting just
after it. A new record creates its own windows (seeded from the aggregates of the
windows next to it) and updates every existing window it falls in.
"""
from __future__ import annotations

from typing import Any, Optional

from ..node_kinds import SLIDING_AGGREGATE
from ..windows import Window, Windowed
from .record import Record
from .windowed import WindowedAggregateProcessor
from .registry import processes


@processes(SLIDING_AGGREGATE)
class SlidingWindowAggregateProcessor(WindowedAggregateProcessor):
    """Records with a ``None`` key or value are dropped; a record whose windows are all
    closed is dropped once; a closed window an update would touch counts as dropped."""

    def init(self) -> None:
        super().init()
        self.windows = self.node.params.windows
        self.diff = self.windows.time_difference_ms
        # a window [s, s + diff] accepts records while s + diff >= observed − grace
        self.close_offset_ms = self.windows.grace_ms

    def process(self, record: Record) -> None:
        if record.key is None or record.value is None:
            self.drop("null_key" if record.key is None else "null_value", record)
            return
        timestamp = record.timestamp
        self.observe(timestamp)
        if timestamp + self.diff < self.close_time:
            self.drop("late", record)
            return
        if timestamp < self.diff:
            self._process_early(record)
        else:
            self._process(record)
        self.emit_closed(record.headers)

    # -- windows of a record ---------------------------------------------------------------
    def _process(self, record: Record) -> None:
        key, timestamp, diff = record.key, record.timestamp, self.diff
        starts: set[int] = set()
        left_agg: Optional[tuple] = None
        right_agg: Optional[tuple] = None
        left_created = right_created = False
        previous: Optional[int] = None
        # newest first, like Kafka's backward fetch
        lower = max(timestamp - 2 * diff, self.live_from())
        for start, value, max_ts in reversed(self.store.fetch(key, lower, timestamp + 1)):
            starts.add(start)
            end = start + diff
            if start == timestamp + 1:
                right_created = True
            elif end > timestamp:
                if right_agg is None:
                    right_agg = (value, max_ts)
                self._update(record, start, (value, max_ts))
            elif end == timestamp:
                left_created = True
                self._update(record, start, (value, max_ts))
                if max_ts < timestamp:
                    previous = max_ts
                else:
                    return
            else:
                left_agg = (value, max_ts)
                previous = max_ts
                break
        if previous is not None:
            previous_right = previous + 1
            if previous_right not in starts and previous_right + diff >= timestamp:
                self._update(record, previous_right, (self.initial(), timestamp), created=True)
        if not left_created:
            if previous is not None and timestamp - diff <= previous:
                seed = (left_agg[0], timestamp)
            else:
                seed = (self.initial(), timestamp)
            self._update(record, timestamp - diff, seed, created=True)
        if not right_created and right_agg is not None and right_agg[1] > timestamp:
            self._create_right_window(record, right_agg)

    def _process_early(self, record: Record) -> None:
        """A record before ``time_difference``: its left window would start below 0, so
        it goes into the window [0, time_difference] (Kafka's ``processEarly``)."""
        key, timestamp, diff = record.key, record.timestamp, self.diff
        combined: Optional[tuple] = None
        right_agg: Optional[tuple] = None
        right_created = False
        starts: set[int] = set()
        previous: Optional[int] = None
        for start, value, max_ts in self.store.fetch(key, self.live_from(), timestamp + 1):
            starts.add(start)
            if start == 0:
                combined = (value, max_ts)
                if max_ts < timestamp:
                    previous = max_ts
            elif start <= timestamp:
                right_agg = (value, max_ts)
                self._update(record, start, (value, max_ts))
            elif start == timestamp + 1:
                right_created = True
        if right_agg is None and combined is not None and combined[1] > timestamp:
            right_agg = combined
        if not right_created and right_agg is not None and right_agg[1] > timestamp:
            self._create_right_window(record, right_agg)
        if previous is not None and previous + 1 not in starts:
            self._update(record, previous + 1, (self.initial(), timestamp), created=True)
        if combined is None:
            self._update(record, 0, (self.initial(), timestamp), created=True)
        else:
            self._update(record, 0, combined)

    # -- store and forward -----------------------------------------------------------------
    def _windowed(self, key: Any, start: int) -> Windowed:
        return Windowed(key, Window(start, start + self.diff))

    def _create_right_window(self, record: Record, right_agg: tuple) -> None:
        """The record's right window holds exactly what the window after it holds."""
        start = record.timestamp + 1
        value, max_ts = right_agg
        self.store.put(record.key, start, value, max_ts)
        self.stored(start)
        self.forward_update(record, self._windowed(record.key, start), (record.key, start), value,
                            None, max_ts)

    def _update(self, record: Record, start: int, current: tuple, created: bool = False) -> None:
        """Add the record to the window at ``start`` (``current``: its aggregate and
        timestamp; for a window being created, the seed to start from)."""
        if start + self.diff < self.close_time:
            self.drop("late", record)
            return
        old, old_ts = current
        new = self.aggregator(record.key, record.value, old)
        timestamp = record.timestamp if old is None else max(record.timestamp, old_ts)
        self.store.put(record.key, start, new, timestamp)
        self.stored(start)
        # Kafka's KStreamSlidingWindowAggregate forwards a created window's seed as its
        # old value (not cached; its cache, the store's: none)
        self.forward_update(record, self._windowed(record.key, start), (record.key, start), new,
                            None if created and self.emitter.caching else old, timestamp)

    def closed_windows(self, close_time: int) -> Optional[list[tuple[Windowed, Any, int]]]:
        upper = close_time - self.diff - 1   # both ends inclusive: end < close time
        if upper < 0:
            return None
        lower = 0 if self.last_emit_close_time < 0 else max(0, self.last_emit_close_time - self.diff)
        return self.store.fetch_all(max(lower, self.live_from()), upper)
