"""Aggregations of grouped streams and re-grouped tables."""
from __future__ import annotations

from .record import Change, Record
from .tables import StatefulProcessor


class StreamAggregateProcessor(StatefulProcessor):
    """``count``/``reduce``/``aggregate`` of a grouped stream (``KStreamAggregate``):
    records with a ``None`` key or value are dropped and counted; the result's
    timestamp is the largest timestamp that went into it."""

    def init(self) -> None:
        super().init()
        params = self.node.params
        self.initializer = params["initializer"]
        self.aggregator = params["aggregator"]
        self.reduce = params["op"] == "reduce"

    def process(self, record: Record) -> None:
        if record.key is None or record.value is None:
            self.context.count("dropped_records")
            return
        kb = self.store.key_bytes(record.key)
        previous = self.store.get_by_bytes(kb)
        if previous is None:
            old, timestamp = None, record.timestamp
            new = record.value if self.reduce else self.aggregator(record.key, record.value,
                                                                  self.initializer())
        else:
            old, timestamp = previous[0], max(record.timestamp, previous[1])
            new = self.aggregator(old, record.value) if self.reduce else \
                self.aggregator(record.key, record.value, old)
        self.store.put_by_bytes(kb, new, timestamp)
        self.emitter.emit(record, kb, new, old, timestamp)


class TableAggregateProcessor(StatefulProcessor):
    """``KGroupedTable`` aggregations: subtract the old value, add the new one."""

    def init(self) -> None:
        super().init()
        params = self.node.params
        self.initializer = params["initializer"]
        self.adder = params["adder"]
        self.subtractor = params["subtractor"]
        self.reduce = params["op"] == "reduce"

    def process(self, record: Record) -> None:
        if record.key is None:
            self.context.count("dropped_records")
            return
        change: Change = record.value
        kb = self.store.key_bytes(record.key)
        previous = self.store.get_by_bytes(kb)
        old = previous[0] if previous else None
        timestamp = record.timestamp if previous is None else max(record.timestamp, previous[1])
        if self.reduce:
            agg = old
            if change.old is not None and agg is not None:
                agg = self.subtractor(agg, change.old)
            if change.new is not None:
                agg = change.new if agg is None else self.adder(agg, change.new)
        else:  # like KTableAggregate: subtract only from an existing aggregate
            agg = old
            if change.old is not None and agg is not None:
                agg = self.subtractor(record.key, change.old, agg)
            if change.new is not None:
                agg = self.adder(record.key, change.new, self.initializer() if agg is None else agg)
        self.store.put_by_bytes(kb, agg, timestamp)
        self.emitter.emit(record, kb, agg, old, timestamp)
