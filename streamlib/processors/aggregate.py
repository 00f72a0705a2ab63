"""Aggregations of grouped streams and re-grouped tables."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..node_kinds import AGGREGATE, COUNT, TABLE_AGGREGATE
from ..node_params import AggregateOp
from ..serdes import Serde
from ..serdes import payloads
from .columnar import row_headers
from .drops import row_where
from .record import Change, Record
from .registry import processes
from .tables import StatefulProcessor


@processes(AGGREGATE)
class StreamAggregateProcessor(StatefulProcessor):
    """``count``/``reduce``/``aggregate`` of a grouped stream (``KStreamAggregate``):
    records with a ``None`` key or value are dropped and counted; the result's
    timestamp is the largest timestamp that went into it."""

    def init(self) -> None:
        super().init()
        params = self.node.params
        self.initializer = params.initializer
        self.aggregator = params.aggregator
        self.reduce = params.op is AggregateOp.REDUCE

    def process(self, record: Record) -> None:
        if record.key is None or record.value is None:
            self.drop("null_key" if record.key is None else "null_value", record)
            return
        kb = self.store.key_bytes(record.key)
        previous = self.store.get_by_bytes(kb)
        if previous is None:
            old, timestamp = None, record.timestamp
            if self.reduce:
                new = record.value
            else:
                initial = self.initializer()
                new = self.aggregator(record.key, record.value, initial)
                if not self.emitter.caching:
                    # Kafka's KStreamAggregate forwards the initial aggregate as the old
                    # value (a filter below may pass it); its cache, the store's: none.
                    old = initial
        else:
            old, timestamp = previous[0], max(record.timestamp, previous[1])
            new = self.aggregator(old, record.value) if self.reduce else \
                self.aggregator(record.key, record.value, old)
        self.store.put_by_bytes(kb, new, timestamp)
        self.emitter.emit(record, kb, new, old, timestamp)


@processes(COUNT)
class StreamCountProcessor(StreamAggregateProcessor):
    """``count()`` of a grouped stream: an aggregation that, cached, can also count a
    batch's rows at once (:meth:`process_batch`), and whose input Spark pre-aggregates
    per key (its lowering, :mod:`streamlib.spark.preaggregate`). Windowed counts are
    window aggregations, never this."""

    def takes_batches(self, key_serde: Serde) -> bool:
        """A cached count emits only each key's last change of the commit, which depends
        on how many records a key had and their largest timestamp, not on their order;
        its input keys need no decoding when they are in the store's own serde."""
        return self.emitter.caching and self.store.key_serde == key_serde

    def process_batch(self, rows: pa.Table, topic: str) -> None:
        """Count ``rows`` (in processing order; key/value bytes as serialized by the
        upstream repartition) per key: one multi-get, Python work per key only."""
        valid = pc.and_(pc.is_valid(rows.column("key")), pc.is_valid(rows.column("value")))
        rows = rows.append_column("weight", pc.cast(valid, pa.int64()))
        self._count(rows, pa.chunked_array([pa.array(np.ones(rows.num_rows, dtype=np.int64))]), topic)

    def process_counted(self, rows: pa.Table, topic: str) -> None:
        """:meth:`process_batch` of rows the count's Spark lowering pre-aggregated
        (:mod:`streamlib.spark.preaggregate`): int64 columns ``records`` (input records
        per row) and ``weight`` (those with a value), ``timestamp`` their largest."""
        self._count(rows, rows.column("records"), topic)

    def _count(self, rows: pa.Table, records: pa.ChunkedArray, topic: str) -> None:
        kept = pc.and_(pc.is_valid(rows.column("key")), pc.greater(rows.column("weight"), 0))
        dropped = int(pc.sum(records).as_py() or 0) - int(pc.sum(pc.if_else(kept, rows.column("weight"), 0)).as_py() or 0)
        if dropped:
            self._drop_batch(rows, records, kept, dropped)
        rows = rows.filter(kept)
        if rows.num_rows == 0:
            return
        rows = rows.append_column("row", pa.array(np.arange(rows.num_rows)))
        groups = (rows.group_by("key", use_threads=False)
                  .aggregate([("timestamp", "max"), ("row", "max"), ("weight", "sum")])
                  .sort_by("row_max"))  # keys in the order of their last record
        kbs = payloads(groups.column("key"))
        previous = self.store.get_many_by_bytes(kbs)
        last_rows = rows.take(groups.column("row_max"))
        keys = self.store.key_serde.deserialize_column(groups.column("key"))
        headers = row_headers(last_rows.column("headers")) or [()] * len(kbs)
        olds = [None if prev is None else prev[0] for prev in previous]
        news = [(old or 0) + n for old, n in zip(olds, _numbers(groups.column("weight_sum")))]
        timestamps = [newest if prev is None else max(newest, prev[1])
                      for newest, prev in zip(_numbers(groups.column("timestamp_max")), previous)]
        self.store.put_many_by_bytes(kbs, news, timestamps)
        self.emitter.emit_many(keys, kbs, news, olds, timestamps, headers, topic,
                               _numbers(last_rows.column("partition")), _numbers(last_rows.column("offset")))

    def _drop_batch(self, rows: pa.Table, records: pa.ChunkedArray, kept: pa.ChunkedArray, dropped: int) -> None:
        """Count the batch's ``dropped`` records: those without a key, the rest without a
        value (a kept row's ``records`` minus its ``weight``), each logged at its first row."""
        no_key = pc.is_null(rows.column("key"))
        null_keys = int(pc.sum(pc.if_else(no_key, records, 0)).as_py() or 0)
        if null_keys:
            self.drop("null_key", row_where(rows, pc.index(no_key, True).as_py()), null_keys)
        if dropped > null_keys:
            no_value = pc.and_(pc.invert(no_key), pc.less(rows.column("weight"), records))
            first = pc.index(no_value, True).as_py()
            self.drop("null_value", row_where(rows, first) if first >= 0 else None, dropped - null_keys)


def _numbers(column: pa.ChunkedArray) -> list:
    """An Arrow column of numbers as a Python list (faster than ``to_pylist``)."""
    return column.to_numpy(zero_copy_only=False).tolist()


@processes(TABLE_AGGREGATE)
class TableAggregateProcessor(StatefulProcessor):
    """``KGroupedTable`` aggregations: subtract the old value, add the new one."""

    def init(self) -> None:
        super().init()
        params = self.node.params
        self.initializer = params.initializer
        self.adder = params.adder
        self.subtractor = params.subtractor
        self.reduce = params.op is AggregateOp.REDUCE

    def process(self, record: Record) -> None:
        if record.key is None:
            self.drop("null_key", record)
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
