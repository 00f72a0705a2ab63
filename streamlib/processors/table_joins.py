"""Table–table joins (Kafka Streams' ``KTableKTableInnerJoin``/``LeftJoin``/``RightJoin``/
``OuterJoin`` and ``KTableKTableJoinMerger``).

A join of two tables is three nodes: one ``table_join`` per side, each triggered by
its own table's changes and looking the other side up in that side's store, and a
``table_join_merge`` that both feed, the result table (optionally materialized). The
side that was not the join's ``this`` gets the joiner with its arguments swapped, so
every result is ``joiner(this_value, other_value)``.
"""
from __future__ import annotations

from ..node_kinds import TABLE_JOIN, TABLE_JOIN_MERGE
from ..node_params import TableJoinMode
from .base import Processor
from .joins import value_getter
from .record import Change, Record
from .tables import StatefulProcessor
from .registry import processes

@processes(TABLE_JOIN)
class TableJoinProcessor(Processor):
    """One side of a table–table join: a change of this side's row meets the other
    side's current row. The result's timestamp is the larger of both rows'; the old
    value is joined too when downstream needs it (``send_old_values``), so a re-grouping
    after the join can subtract it. A change that turns a match into a non-match
    forwards a delete (new value ``None``)."""

    def init(self) -> None:
        params = self.node.params
        self.get = value_getter(self.context.store(params.store))
        self.joiner = params.joiner
        self.mode = params.mode

    def process(self, record: Record) -> None:
        if record.key is None:
            self.drop("null_key", record)
            return
        change: Change = record.value
        row = self.get(record.key)
        other = None if row is None else row[0]
        mode = self.mode
        if other is None:
            if not mode.keeps_unmatched or (change.new is None and change.old is None):
                return
            timestamp = record.timestamp
        else:
            timestamp = max(record.timestamp, row[1])
        new = old = None
        if mode is TableJoinMode.RIGHT:
            new = self.joiner(change.new, other)
            if self.send_old_values:
                old = self.joiner(change.old, other)
        else:
            keeps_unmatched = mode is TableJoinMode.OUTER and other is not None
            if change.new is not None or keeps_unmatched:
                new = self.joiner(change.new, other)
            if self.send_old_values and (change.old is not None or keeps_unmatched):
                old = self.joiner(change.old, other)
        result = Record(record.key, Change(new, old), timestamp, record.headers, record.topic,
                        record.partition, record.offset)
        self.forward(result)


@processes(TABLE_JOIN_MERGE)
class TableJoinMergeProcessor(StatefulProcessor):
    """The result table of a table–table join: forwards both sides' results and, when
    materialized, keeps them in its store. Not materialized, the old value is the sides'
    (only when downstream needs it); materialized, it is the store's, so a delete of a
    row emitted in an earlier commit is forwarded (Kafka's caching store reads the old
    value from the store it flushes into)."""

    def process(self, record: Record) -> None:
        change: Change = record.value
        if self.store is None:
            self.emitter.emit(record, record.key, change.new, change.old if self.send_old_values else None,
                              record.timestamp)
            return
        kb = self.store.key_bytes(record.key)
        previous = self.store.get_by_bytes(kb)
        self.store.put_by_bytes(kb, change.new, record.timestamp)
        self.emitter.emit(record, kb, change.new, previous[0] if previous else None, record.timestamp)
