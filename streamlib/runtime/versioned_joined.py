"""A sub-topology that is one stream–table join with a grace period, run with a lean
loop over a batch's rows.

``stream source -> join (versioned) -> merge -> stateless steps... -> sink`` beside
``table source -> table -> join updates -> merge`` (:mod:`streamlib.processors.
versioned_join`). The two sides interleave (a late table update re-joins the stream
records buffered before it), so the rows still go one by one in processing order, but
a stream row needs no ``Record``, no deserialization of its own (the stream's keys and
values are decoded as columns first) and no trip down the processors: the join's
stream side runs inline (:meth:`VersionedStreamTableJoinProcessor.join_one`, the code
``process`` runs) and its result, like the table side's corrections (caught where they
reach the merge), goes into one list, in order, which the steps and the sink then
encode as columns (``processors.columnar``). Table rows go through their source record
by record, as before.

It applies only where the outcome is exactly per-record processing's: both sources
accept the rows whole (``SourceProcessor.takes_table``), no stream-time timer is due,
and no stream record has a ``None`` key or value. A joiner that raises fails the batch
as per-record processing does (the record is processed again by the join's own
``process``, which names it); a step or sink that raises on the collected results has
them forwarded record by record instead, which raises at the same record.
``tests/unit/test_join_batch.py`` checks the outcome is per-record processing's, a
property test.
"""
from __future__ import annotations

from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc

from ..processors import Processor, ProcessorContext, SinkProcessor, SourceProcessor
from ..processors.columnar import chain_below, headers_array, run_chain
from ..processors.record import Record
from ..processors.tables import TableSourceProcessor
from ..processors.versioned_join import VersionedStreamTableJoinProcessor, VersionedTableUpdateProcessor
from .joined import below, join_sources, split_rows

#: a result on its way to the merge: key, value, timestamp, headers, and the input
#: record's topic, partition and offset
_Result = tuple


class _Collector(Processor):
    """Stands in for the merge under the join's table side during a batch: keeps the
    corrections it forwards, in order."""

    def __init__(self, merge: Processor, results: list[_Result]):
        super().__init__(merge.node, merge.context)
        self.results = results

    def process(self, record: Record) -> None:
        self.results.append((record.key, record.value, record.timestamp, record.headers, record.topic,
                             record.partition, record.offset))


class VersionedJoinBatch:
    """The join with grace of a sub-topology that is only that: a batch's rows at once."""

    def __init__(self, stream: SourceProcessor, join: VersionedStreamTableJoinProcessor,
                 updates: VersionedTableUpdateProcessor, steps: list[Processor], sink: SinkProcessor,
                 table: SourceProcessor, context: ProcessorContext):
        self.stream = stream
        self.join = join
        self.updates = updates
        self.steps = steps
        self.sink = sink
        self.table = table
        self.context = context

    @staticmethod
    def of(processors: dict[str, Processor], context: ProcessorContext) -> Optional["VersionedJoinBatch"]:
        """The join of an (initialised) sub-topology's processors, if it is that shape."""
        found = join_sources(processors, VersionedStreamTableJoinProcessor, TableSourceProcessor)
        if found is None:
            return None
        stream, table = found
        join, table_source = stream.children[0], table.children[0]
        if len(table_source.children) != 1 or type(table_source.children[0]) is not VersionedTableUpdateProcessor:
            return None
        updates = table_source.children[0]
        chain = chain_below(join)
        if chain is None or not chain[0] or updates.children != [chain[0][0]]:
            return None   # the join's two sides meet in the chain's first step: the merge
        params, other = join.node.params, updates.node.params
        steps, sink = chain
        if ((params.versions, params.buffer) != (other.versions, other.buffer)
                or len(steps) + 6 != len(processors) or len(below(table_source)) != len(steps) + 2):
            return None
        return VersionedJoinBatch(stream, join, updates, steps, sink, table, context)

    @property
    def merge(self) -> Processor:
        """Where the join's two sides meet: the chain's first step."""
        return self.steps[0]

    def run(self, rows: pa.Table) -> bool:
        """Process ``rows`` (in processing order) as record-by-record processing would;
        ``False``, with nothing changed, where it cannot (process them record by record)."""
        split = split_rows(self.stream, self.table, rows)
        if split is None:
            return False
        results: list[_Result] = []
        updates, merge = self.updates, self.merge
        updates.children = [_Collector(merge, results)]
        try:
            self._loop(rows, split.is_stream.tolist(), split.keys, split.values, results)
        finally:
            updates.children = [merge]
        split.count_in(self.context)
        if results:
            self._emit(results)
        return True

    def _loop(self, rows: pa.Table, is_stream: list, keys: list, values: list, results: list[_Result]) -> None:
        columns = [rows.column(c).to_numpy(zero_copy_only=False).tolist()
                   for c in ("topic", "partition", "offset", "timestamp", "key", "value")]
        headers = rows.column("headers")
        headers = headers.to_pylist() if pc.sum(pc.list_value_length(headers)).as_py() else None
        join, receive = self.join, self.table.receive
        join_one = join.join_one
        s = 0
        for i, (stream, topic, partition, offset, timestamp, key, value) in enumerate(zip(is_stream, *columns)):
            hdrs = () if headers is None or not headers[i] else tuple((h["key"], h["value"]) for h in headers[i])
            if not stream:
                receive(topic, partition, offset, timestamp, key, value, hdrs)
                continue
            try:
                joined = join_one(keys[s], values[s], timestamp, hdrs, topic, partition, offset)
            except Exception:   # noqa: BLE001 - the join's own process names the record
                Processor.forward_all((join,), Record(keys[s], values[s], timestamp, hdrs, topic, partition,
                                                      offset))
                raise
            if joined is not None:
                results.append((keys[s], joined[0], timestamp, hdrs, topic, partition, offset))
            s += 1

    def _emit(self, results: list[_Result]) -> None:
        try:
            rows = run_chain(self.steps, self.sink, [r[0] for r in results], [r[1] for r in results],
                             pa.array([r[2] for r in results], pa.int64()),
                             headers_array([r[3] for r in results]))
        except Exception:  # noqa: BLE001 - record by record raises at the same record
            for key, value, timestamp, headers, topic, partition, offset in results:
                Processor.forward_all((self.merge,), Record(key, value, timestamp, headers, topic, partition,
                                                            offset))
            return
        self.context.emit_rows(rows)
