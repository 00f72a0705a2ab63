"""Session-window aggregation (Kafka Streams' ``KStreamSessionWindowAggregate``).

A session is ``[first, last]`` record timestamp of a key, both inclusive; a record
within ``gap`` of one or more sessions merges them (and itself) into one. The merged
sessions are removed and forwarded as deletes (tombstones), then the merged session
is forwarded with the window end as its timestamp.
"""
from __future__ import annotations

from typing import Any, Optional

from ..node_kinds import SESSION_AGGREGATE
from ..windows import Window, Windowed
from .record import Record
from .windowed import WindowedAggregateProcessor
from .registry import processes


@processes(SESSION_AGGREGATE)
class SessionWindowAggregateProcessor(WindowedAggregateProcessor):
    """Records with a ``None`` key are dropped; a record whose merged session would
    already be closed (end < observed − grace − gap) is dropped.

    Session updates carry no headers: a session is made of many records, and Kafka
    Streams 4.3 forwards none of the input's headers on them (its time windows do)."""

    def init(self) -> None:
        super().init()
        self.windows = self.node.params.windows
        self.merger = self.node.params.merger
        self.gap = self.windows.gap_ms
        self.close_offset_ms = self.windows.grace_ms + self.gap

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            self.drop("null_key", record)
            return
        timestamp = record.timestamp
        self.observe(timestamp)
        record = Record(key, record.value, timestamp, (), record.topic, record.partition, record.offset)
        agg = self.initial()
        start = end = timestamp
        merged = self.store.find_sessions(key, max(timestamp - self.gap, self.find_from()),
                                          timestamp + self.gap)
        for window, value, _ in merged:
            agg = self.merger(key, agg, value)
            start, end = min(start, window.start), max(end, window.end)
        if end < self.close_time:
            self.drop("late", record)
        else:
            if (start, end) != (timestamp, timestamp):
                for window, value, _ in merged:
                    self.store.remove(key, window)
                    self.forward_update(record, Windowed(key, window), (key, window), None, value,
                                        window.end)
            agg = self.aggregator(key, record.value, agg)
            window = Window(start, end)
            self.store.put(key, window, agg, end)
            self.stored(end)
            self.forward_update(record, Windowed(key, window), (key, window), agg, None, end)
        self.emit_closed()

    def find_from(self) -> int:
        """The earliest session end a merge may see. Kafka's session stores (both
        kinds) hide sessions ending at or before store time − retention from
        ``findSessions`` at once (``getActualFrom``), whatever their segments hold; such
        a session is then neither merged nor deleted, and a new one may replace it."""
        return self.store_time - self.retention_ms + 1 if self.store_time >= 0 else 0

    def expired_before(self) -> int:
        """Sessions ending before this are gone. Kafka's time-ordered session store
        (on_window_close) hides ends < store time − retention; its key-ordered one drops
        whole segments of max(retention / 2, 1 min) once they fall behind."""
        cutoff = self.store_time - self.retention_ms
        if self.emit_final or cutoff < 0:
            return cutoff
        segment = max(self.retention_ms // 2, 60_000)
        return cutoff // segment * segment

    def closed_windows(self, close_time: int) -> Optional[list[tuple[Windowed, Any, int]]]:
        upper = close_time - 1      # both ends inclusive: a session ending before close time
        lower = max(0, self.last_emit_close_time)
        if upper < 0 or upper < lower:
            return None
        closed = [(windowed, value, windowed.window.end)
                  for windowed, value, _ in self.store.fetch_all(lower, upper)]
        # Kafka's time-ordered session store (emit-final) keys sessions by end, start,
        # key bytes: sessions ending together are emitted by start first
        serialize = self.store.key_serde.serialize
        closed.sort(key=lambda c: (c[0].window.end, c[0].window.start, serialize(c[0].key)))
        return closed
