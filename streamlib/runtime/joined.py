"""A sub-topology that is one classic stream–table join, run over whole columns.

``stream source -> join (grace 0) -> stateless steps... -> sink`` beside
``table source -> table store`` (the table's updates emitted at the commit, or going
nowhere): what the stream records meet depends only on where each one stands in the
processing order relative to the table's updates of its key, so a batch needs no
``Record`` per order. For each stream row, the table's row is that of the key's last
table update before it in the batch (found for all rows at once with NumPy), else the
store's (one multi-get for the keys the batch has not updated before their first
order); the joiner runs over lists, the steps and the sink over columns
(``processors.columnar``). The table's updates then go through the table source at
once (``TableSourceProcessor.process_rows``: one multi-get, each key's last row
stored and its cached update emitted; their effects do not depend on when the stream
rows ran).

It applies only where the outcome is exactly per-record processing's: both sources
accept the rows whole (``SourceProcessor.takes_table``: valid timestamps, keys and
values that decode and encode back to the same bytes), the stream's key serde is the
store's (so the input key bytes are the store's keys), no stream-time timer is due, and
no stream record has a ``None`` key or value (those are dropped one by one). Anything
else, or anything that raises (a joiner, a step, the sink's serde), makes
:meth:`JoinedBatch.run` return ``False`` with nothing changed: the task then processes
the rows record by record, which reports it exactly as before. ``tests/unit/
test_join_batch.py`` checks the outcome is per-record processing's, a property test.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..processors import Processor, ProcessorContext, SinkProcessor, SourceProcessor
from ..processors.columnar import chain_below, run_chain
from ..processors.joins import StreamTableJoinProcessor
from ..processors.stores import TimestampedKeyValueStore
from ..processors.tables import TableSourceProcessor
from ..serdes import payloads


def last_before(keys: pa.ChunkedArray, is_table: np.ndarray) -> np.ndarray:
    """For each row, the index of the last row of the same key at or before it that is
    a table row (``is_table``), or -1.

    >>> last_before(pa.chunked_array([[b"a", b"b", b"a", b"a", b"b"]]),
    ...             np.array([True, False, False, True, False])).tolist()
    [0, -1, 0, 3, -1]
    """
    n = len(is_table)
    codes = pc.fill_null(pc.dictionary_encode(keys).combine_chunks().indices, -1).to_numpy()
    order = np.argsort(codes, kind="stable")        # rows grouped by key, in order within a key
    sorted_codes = codes[order]
    index = np.arange(n)
    group_start = np.maximum.accumulate(np.where(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]], index, 0))
    latest = np.maximum.accumulate(np.where(is_table[order], index, -1))
    found = np.where(latest >= group_start, order[np.maximum(latest, 0)], -1)
    out = np.empty(n, dtype=np.int64)
    out[order] = found
    return out


def below(proc: Processor) -> set[int]:
    """The ids of ``proc``'s descendants."""
    found: set[int] = set()
    todo = list(proc.children)
    while todo:
        child = todo.pop()
        if id(child) not in found:
            found.add(id(child))
            todo.extend(child.children)
    return found


def join_sources(processors: dict[str, Processor], join_type: type,
                 table_type: type) -> Optional[tuple[SourceProcessor, SourceProcessor]]:
    """``(stream source, table source)`` of a sub-topology with two plain sources (no
    timestamp extractor, no change pairs), one feeding only a ``join_type`` processor,
    the other only a ``table_type`` one."""
    sources = [p for p in processors.values() if type(p) is SourceProcessor]
    if len(sources) != 2 or any(s.extractor is not None or s.changes or len(s.children) != 1
                                for s in sources):
        return None
    joins = [s for s in sources if type(s.children[0]) is join_type]
    tables = [s for s in sources if type(s.children[0]) is table_type]
    return (joins[0], tables[0]) if len(joins) == 1 and len(tables) == 1 else None


@dataclass
class SplitRows:
    """A batch's rows of the stream and of the table, and the stream's keys and values."""

    is_stream: np.ndarray
    is_table: np.ndarray
    stream_rows: pa.Table
    table_rows: pa.Table
    keys: list
    values: list

    def count_in(self, context: ProcessorContext) -> None:
        """Count the stream rows in and advance stream time past them (the table's rows
        go through their source, which does so for them)."""
        context.count("records_in", self.stream_rows.num_rows)
        newest = pc.max(self.stream_rows.column("timestamp")).as_py()
        if newest > context.stream_time:
            context.stream_time = newest


def split_rows(stream: SourceProcessor, table: SourceProcessor, rows: pa.Table) -> Optional[SplitRows]:
    """``rows`` split by source, or None unless both sources accept theirs whole
    (``SourceProcessor.takes_table``) and every stream record has a key and a value
    (one without is dropped, or joined with no row, one by one)."""
    is_stream = np.isin(rows.column("topic").to_numpy(zero_copy_only=False), list(stream.node.params.topics))
    is_table = ~is_stream
    stream_rows = rows.filter(pa.array(is_stream))
    table_rows = rows.filter(pa.array(is_table))
    if stream_rows.num_rows == 0 or not (stream.takes_table(stream_rows) and table.takes_table(table_rows)):
        return None
    if stream_rows.column("key").null_count or stream_rows.column("value").null_count:
        return None
    try:
        keys = stream.key_serde.deserialize_column(stream_rows.column("key"))
        values = stream.value_serde.deserialize_column(stream_rows.column("value"))
    except Exception:  # noqa: BLE001 - the record-at-a-time path reports it precisely
        return None
    if any(k is None for k in keys) or any(v is None for v in values):
        return None
    return SplitRows(is_stream, is_table, stream_rows, table_rows, keys, values)


class JoinedBatch:
    """A stream source into a classic stream–table join into a fusable chain, and the
    table's source: a batch of both topics' rows at once."""

    def __init__(self, stream: SourceProcessor, join: StreamTableJoinProcessor, steps: list[Processor],
                 sink: SinkProcessor, table: SourceProcessor, context: ProcessorContext):
        self.stream = stream
        self.join = join
        self.steps = steps
        self.sink = sink
        self.table = table
        self.table_source: TableSourceProcessor = table.children[0]
        self.store: TimestampedKeyValueStore = context.store(join.node.params.store)
        self.context = context

    @staticmethod
    def of(processors: dict[str, Processor], context: ProcessorContext) -> Optional["JoinedBatch"]:
        """The join of an (initialised) sub-topology's processors, if it is that shape."""
        found = join_sources(processors, StreamTableJoinProcessor, TableSourceProcessor)
        if found is None:
            return None
        stream, table = found
        join, table_source = stream.children[0], table.children[0]
        store = context.stores.get(join.node.params.store)
        if (table_source.node.params.store != join.node.params.store
                or type(store) is not TimestampedKeyValueStore or store.key_serde != stream.key_serde
                or (table_source.children and not table_source.emitter.caching)):
            return None
        found = chain_below(join)
        if found is None or len(found[0]) + 5 + len(below(table_source)) != len(processors):
            return None
        return JoinedBatch(stream, join, found[0], found[1], table, context)

    def run(self, rows: pa.Table) -> bool:
        """Process ``rows`` (in processing order) as record-by-record processing would:
        emit the join's results, count the rows in, advance stream time, update the
        table. ``False``, with nothing changed, where it cannot: process them record by
        record instead."""
        split = split_rows(self.stream, self.table, rows)
        if split is None:
            return False
        try:
            table_keys, table_values = self._table_columns(split.table_rows)
            output = self._join(rows, split, table_values)
        except Exception:  # noqa: BLE001 - the record-at-a-time path reports it precisely
            return False
        split.count_in(self.context)
        self.context.emit_rows(output)
        table_rows = split.table_rows
        if table_rows.num_rows:
            self.table.receive_table(table_rows, table_rows.column("topic")[0].as_py())
            kbs = payloads(table_rows.column("key")) if self.table.key_serde == self.store.key_serde else None
            self.table_source.process_rows(table_rows, table_keys, table_values, kbs)
        return True

    def _table_columns(self, table_rows: pa.Table) -> tuple[list, list]:
        """The table rows' keys and values, decoded (``None`` for a null)."""
        if table_rows.num_rows == 0:
            return [], []
        return (self.table.key_serde.deserialize_column(table_rows.column("key")),
                self.table.value_serde.deserialize_column(table_rows.column("value")))

    def _join(self, rows: pa.Table, split: SplitRows, table_values: list) -> pa.Table:
        keys, values, is_stream, is_table = split.keys, split.values, split.is_stream, split.is_table
        stream_rows = split.stream_rows
        # the table's row each stream row meets: the key's last update before it in the
        # batch (its position among the table rows), else the store's
        latest = last_before(rows.column("key"), is_table)[is_stream]
        table_row = np.cumsum(is_table) - 1          # position of each table row among them
        others: list = [None] * len(keys)
        in_batch = np.flatnonzero(latest >= 0)
        if len(in_batch):
            for i, t in zip(in_batch.tolist(), table_row[latest[in_batch]].tolist()):
                others[i] = table_values[t]
        from_store = np.flatnonzero(latest < 0)
        if len(from_store):
            kbs = payloads(stream_rows.column("key").take(pa.array(from_store)))
            for i, entry in zip(from_store.tolist(), self.store.get_many_by_bytes(kbs)):
                if entry is not None:
                    others[i] = entry[0]
        joiner = self.join.joiner
        headers = stream_rows.column("headers")
        timestamps = stream_rows.column("timestamp")
        if self.join.left:
            results = [joiner(v, o) for v, o in zip(values, others)]
        else:
            kept = [o is not None for o in others]
            if not all(kept):
                mask = pa.array(kept)
                keys = [k for k, keep in zip(keys, kept) if keep]
                values = [v for v, keep in zip(values, kept) if keep]
                others = [o for o in others if o is not None]
                headers, timestamps = headers.filter(mask), timestamps.filter(mask)
            results = [joiner(v, o) for v, o in zip(values, others)]
        return run_chain(self.steps, self.sink, keys, results, timestamps, headers)
