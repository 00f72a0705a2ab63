"""KTable steps: materializing updates, filtering and mapping changes, re-grouping."""
from __future__ import annotations

from itertools import repeat
from typing import Any, Optional

import pyarrow as pa

from ..node_kinds import TABLE_FILTER, TABLE_MAP_VALUES, TABLE_SELECT, TABLE_SOURCE
from .base import Processor
from .columnar import chain_below, headers_array, row_headers, run_chain
from .record import Change, Record
from .registry import processes

_UNKNOWN = object()


class TableEmitter:
    """Forwards table updates downstream: at once without caching, or at the end of
    the commit with caching — the latest update per key, in the order keys were last
    updated, with the value the key had before the commit as the old value
    (Kafka Streams' record cache)."""

    def __init__(self, processor: Processor, caching: bool):
        self.processor = processor
        self.caching = caching
        #: with caching: store key -> the key's latest update of the commit, as a tuple
        #: (key, new, old, timestamp, headers, topic, partition, offset): a Record is
        #: made only for what is forwarded record by record
        self._pending: dict[Any, tuple] = {}
        #: when the updates go down a straight stateless chain into a sink: that chain,
        #: run over columns at flush (processors.columnar); found at the first flush,
        #: once every processor is initialised
        self._tail: Any = _UNKNOWN if caching else None

    def emit(self, record: Record, kb: bytes, new: Any, old: Any, timestamp: int) -> None:
        if not self.caching:
            self.processor.forward(Record(record.key, Change(new, old), timestamp, record.headers,
                                          record.topic, record.partition, record.offset))
            return
        entry = self._pending.pop(kb, None)
        if entry is not None:
            old = entry[2]
        self._pending[kb] = (record.key, new, old, timestamp, record.headers, record.topic,
                             record.partition, record.offset)

    def emit_many(self, keys: list, kbs: list[bytes], news: list, olds: list, timestamps: list[int],
                  headers: list, topic: Any, partitions: list[int], offsets: list[int]) -> None:
        """:meth:`emit` of many updates of distinct keys, in order (with caching);
        ``topic``: the updates' topic, or a list of each one's."""
        pending = self._pending
        if pending:  # a key updated earlier in the commit keeps its old value from before it
            olds = [pending.pop(kb)[2] if kb in pending else old for kb, old in zip(kbs, olds)]
        topics = repeat(topic) if isinstance(topic, str) else topic
        pending.update(zip(kbs, zip(keys, news, olds, timestamps, headers, topics, partitions, offsets)))

    def flush(self) -> None:
        pending, self._pending = self._pending, {}
        # a key that had no row before the commit and has none after: nothing to say
        # (Kafka's caching store skips such entries at flush)
        updates = [u for u in pending.values() if u[1] is not None or u[2] is not None]
        if self._tail is _UNKNOWN:
            self._tail = chain_below(self.processor)
        if self._tail is not None and len(updates) > 1:
            try:
                rows = run_chain(*self._tail, [u[0] for u in updates], [Change(u[1], u[2]) for u in updates],
                                 pa.array([u[3] for u in updates], pa.int64()),
                                 headers_array([u[4] for u in updates]))
            except Exception:  # noqa: BLE001 - record by record below reports it precisely
                rows = None
            if rows is not None:
                self.processor.context.emit_rows(rows)
                return
        self.processor.forward_many([Record(key, Change(new, old), timestamp, headers, topic, partition, offset)
                                     for key, new, old, timestamp, headers, topic, partition, offset in updates])


class StatefulProcessor(Processor):
    """A processor with a timestamped store (optional for derived tables) and an emitter."""

    def init(self) -> None:
        store = self.node.params.store
        self.store = self.context.store(store) if store else None
        self.emitter = TableEmitter(self, self.caching and self.store is not None)

    def flush(self) -> None:
        self.emitter.flush()


@processes(TABLE_SOURCE)
class TableSourceProcessor(StatefulProcessor):
    """A stream read as a table: each record replaces its key's value."""

    def process(self, record: Record) -> None:
        if record.key is None:
            self.drop("null_key", record)
            return
        kb = self.store.key_bytes(record.key)
        previous = self.store.get_by_bytes(kb)
        self.store.put_by_bytes(kb, record.value, record.timestamp)
        self.emitter.emit(record, kb, record.value, previous[0] if previous else None, record.timestamp)

    def process_rows(self, rows: pa.Table, keys: list, values: list, kbs: Optional[list[bytes]]) -> None:
        """:meth:`process` of every row of ``rows`` (in processing order, ``keys`` and
        ``values`` decoded; ``kbs`` the store's key bytes, None: serialize ``keys``) with
        one multi-get and the same outcome: each key's last row is its stored value, its
        value before the batch the cached update's old value, the store's changes in the
        order keys were first written, the updates in the order they were last written.
        Rows without a key are dropped record by record, as :meth:`process` drops them."""
        if kbs is None:
            key_bytes = self.store.key_bytes
            kbs = [None if key is None else key_bytes(key) for key in keys]
        timestamps = rows.column("timestamp").to_numpy().tolist()
        partitions = rows.column("partition").to_numpy().tolist()
        offsets = rows.column("offset").to_numpy().tolist()
        topics = rows.column("topic").to_pylist()
        hdrs = row_headers(rows.column("headers"))
        last: dict[bytes, int] = {}   # key bytes -> its last row, in the order of first rows
        for i, (kb, key) in enumerate(zip(kbs, keys)):
            if key is None:
                self.process(Record(None, values[i], timestamps[i], hdrs[i] if hdrs else (), topics[i],
                                    partitions[i], offsets[i]))
            else:
                last[kb] = i
        if not last:
            return
        written = list(last)
        previous = self.store.get_many_by_bytes(written)
        self.store.put_many_by_bytes(written, [values[i] for i in last.values()],
                                     [timestamps[i] for i in last.values()])
        if not self.emitter.caching:   # (no child: JoinedBatch takes only that or caching)
            return
        olds = dict(zip(written, (None if p is None else p[0] for p in previous)))
        order = sorted(last.values())      # keys in the order of their last rows
        by_row = [kbs[i] for i in order]
        self.emitter.emit_many([keys[i] for i in order], by_row, [values[i] for i in order],
                               [olds[kb] for kb in by_row], [timestamps[i] for i in order],
                               [hdrs[i] if hdrs else () for i in order], [topics[i] for i in order],
                               [partitions[i] for i in order], [offsets[i] for i in order])


class _DerivedTableProcessor(StatefulProcessor):
    """Shared by filter and map_values: compute the change, optionally store it."""

    def derive(self, key: Any, value: Any) -> Any:
        raise NotImplementedError

    def process(self, record: Record) -> None:
        change: Change = record.value
        new = None if change.new is None else self.derive(record.key, change.new)
        old = None if change.old is None else self.derive(record.key, change.old)
        if self.store is not None:
            kb = self.store.key_bytes(record.key)
            previous = self.store.get_by_bytes(kb)
            old = previous[0] if previous else None
            self.store.put_by_bytes(kb, new, record.timestamp)
        if new is None and old is None and self.skips_empty_changes():
            return
        self.emitter.emit(record, record.key if self.store is None else kb, new, old, record.timestamp)

    def skips_empty_changes(self) -> bool:
        """Kafka Streams' ``KTableMapValues`` forwards every change, deletes included."""
        return False


@processes(TABLE_FILTER)
class TableFilterProcessor(_DerivedTableProcessor):
    """Kafka Streams' ``KTableFilter``: a row that does not match is forwarded as a
    delete, even if the key had no row; only when downstream needs old values (it
    re-groups, joins or suppresses) is a delete of a missing row not forwarded."""

    def init(self) -> None:
        super().init()
        self.predicate = self.node.params.predicate
        self.keep_when = not self.node.params.negate

    def derive(self, key: Any, value: Any) -> Optional[Any]:
        return value if bool(self.predicate(key, value)) == self.keep_when else None

    def skips_empty_changes(self) -> bool:
        return self.send_old_values


@processes(TABLE_MAP_VALUES)
class TableMapValuesProcessor(_DerivedTableProcessor):
    def init(self) -> None:
        super().init()
        self.mapper = self.node.params.mapper

    def derive(self, key: Any, value: Any) -> Any:
        return self.mapper(value)


@processes(TABLE_SELECT)
class TableSelectProcessor(Processor):
    """``KTable.group_by``: the old row leaves its old group, the new row joins its
    new group (one change when the group is unchanged), like ``KTableRepartitionMap``."""

    def init(self) -> None:
        self.selector = self.node.params.selector

    def process(self, record: Record) -> None:
        change: Change = record.value
        new = self._select(record, change.new)
        old = self._select(record, change.old)
        if new is not None and old is not None and new[0] == old[0]:
            self.forward(record.with_(new[0], Change(new[1], old[1])))
            return
        if old is not None:
            self.forward(record.with_(old[0], Change(None, old[1])))
        if new is not None:
            self.forward(record.with_(new[0], Change(new[1], None)))

    def _select(self, record: Record, value: Any) -> Optional[tuple]:
        """The (key, value) pair a row goes to, or None: a row the selector maps to None,
        or to a None key, is dropped and counted; one whose selected value is None is
        skipped (Kafka's ``KTableRepartitionMap``)."""
        if value is None:
            return None
        pair = self.selector(record.key, value)
        if pair is None:
            self.drop("null_key", record, detail="the group_by selector returned None")
            return None
        key, selected = pair
        if key is None:
            self.drop("null_key", record, detail="the group_by selector returned a None key")
            return None
        return None if selected is None else (key, selected)
