"""Stream–global-table join (Kafka Streams' ``KStreamGlobalKTableJoin``)."""
from __future__ import annotations

from ..node_kinds import GLOBAL_JOIN
from .base import Processor
from .record import Record
from .registry import processes


@processes(GLOBAL_JOIN)
class GlobalTableJoinProcessor(Processor):
    """Each stream record looks ``key_selector(key, value)`` up in the task's replica of
    the global table, as it is now; the result keeps the record's key and timestamp.

    A record with a ``None`` value is dropped and counted in ``dropped_records``, and so
    is one whose selected key is ``None`` in an inner join. A left join joins a record
    whose selector returns ``None`` with no row, ``joiner(v, None)`` (KIP-962, as Kafka
    ≥ 4.1 after KAFKA-19208); the stream record's own key plays no part in either rule."""

    def init(self) -> None:
        params = self.node.params
        self.table = self.context.store(params.global_store)
        self.key_selector = params.key_selector
        self.joiner = params.joiner
        self.left = params.left

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if value is None:
            self.drop("null_value", record)
            return
        table_key = self.key_selector(key, value)
        if table_key is None and not self.left:
            self.drop("null_key", record, detail="the key selector returned None (inner join)")
            return
        row = None if table_key is None else self.table.get(table_key)
        other = None if row is None else row[0]
        if other is not None or self.left:
            self.forward(record.with_value(self.joiner(value, other)))
