"""Windowed aggregations of grouped streams: the shared machinery and time windows
(Kafka Streams' ``KStreamWindowAggregate``).

A windowed aggregation keeps its own observed stream time (the largest timestamp it
has seen, or the application's stream time the runtime moved it to), which decides
which windows are closed: a window closes once observed time − grace reaches its
end. Results are table updates keyed by :class:`~streamlib.windows.Windowed` — every
update (``EmitStrategy.on_window_update()``, the default; one per window per commit
with caching) or one final result per window when it closes
(``EmitStrategy.on_window_close()``, KIP-825).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..node_kinds import WINDOW_AGGREGATE
from ..node_params import AggregateOp
from ..serdes import payloads
from ..windows import Windowed
from .base import Processor
from .drops import row_where
from .record import Change, Record
from .tables import TableEmitter
from .registry import processes

#: a window not folded yet in :meth:`TimeWindowAggregateProcessor._fold`
_UNSET = object()


class WindowedAggregateProcessor(Processor):
    """Observed time, emission and expiry shared by time, sliding and session windows.

    Subclasses implement :meth:`process` and :meth:`closed_windows` (what became final
    since the last emission) and set :attr:`grace_ms` / :attr:`close_offset_ms`."""

    #: window end + this = the stream time at which a window closes
    close_offset_ms = 0

    def init(self) -> None:
        params = self.node.params
        self.store = self.context.store(params.store)
        self.initializer = params.initializer
        self.aggregator = params.aggregator
        self.emit_final = params.emit_final
        self.retention_ms = params.retention_ms
        self.emitter = TableEmitter(self, self.caching and not self.emit_final)
        self._time_key = f"{self.name}.observed_time"
        self._emit_key = f"{self.name}.last_emit_close_time"
        self._store_time_key = f"{self.name}.store_time"
        self.observed_time = self.context.get_long(self._time_key)
        self.last_emit_close_time = self.context.get_long(self._emit_key)
        #: the largest window start (session end) put into the store: what expiry
        #: counts from, as in Kafka's segmented stores
        self.store_time = self.context.get_long(self._store_time_key)

    @property
    def close_time(self) -> int:
        """Windows ending before (sliding, session: at or before) this are closed."""
        return self.observed_time - self.close_offset_ms

    def observe(self, timestamp: int) -> None:
        if timestamp > self.observed_time:
            self.observed_time = timestamp

    def watermark(self) -> int:
        return self.observed_time - self.close_offset_ms

    def initial(self) -> Any:
        return self.initializer() if self.initializer is not None else None

    def forward_update(self, record: Record, windowed: Windowed, ident: Any, new: Any, old: Any,
                       timestamp: int) -> None:
        """An update of one window (held back under ``on_window_close``)."""
        if not self.emit_final:
            self.emitter.emit(record.with_(windowed, None), ident, new, old, timestamp)

    # -- final results -------------------------------------------------------------------
    def closed_windows(self, close_time: int) -> Optional[list[tuple[Windowed, Any, int]]]:
        """Windows that closed since the last emission, in emission order; ``None`` when
        no window can have closed yet (the last emission time then stays, as in Kafka)."""
        raise NotImplementedError

    def emit_closed(self, headers: tuple = ()) -> None:
        """Under ``on_window_close``: forward each newly closed window once (Kafka's
        ``maybeForwardFinalResult`` with no throttling)."""
        close_time = self.close_time
        if not self.emit_final or close_time <= self.last_emit_close_time:
            return
        closed = self.closed_windows(close_time)
        if closed is None:
            return
        for windowed, value, timestamp in closed:
            self.forward(Record(windowed, Change(value, None), timestamp, headers))
        self.last_emit_close_time = close_time

    def advance_time(self, stream_time: int) -> None:
        if stream_time > self.observed_time:
            self.observed_time = stream_time
            self.emit_closed()

    def stored(self, time: int) -> None:
        """A window starting (a session ending) at ``time`` was put into the store."""
        if time > self.store_time:
            self.store_time = time

    def expired_before(self) -> int:
        """Windows starting before this are gone from the store. Kafka's key-ordered
        window store keeps starts > store time − retention, its time-ordered one (used
        for on_window_close) starts >= store time − retention."""
        return self.store_time - self.retention_ms + (0 if self.emit_final else 1)

    def live_from(self) -> int:
        """The first window start (session end) reads may see. Kafka's window stores hide
        expired windows from every fetch at once (``getActualFrom``), not only once a
        cleanup drops them; ours drop them at flush, so reads in between bound by this."""
        return max(0, self.expired_before()) if self.store_time >= 0 else 0

    def flush(self) -> None:
        self.emitter.flush()
        if self.store_time >= 0:
            self.store.expire(self.expired_before())
        self.context.put_long(self._time_key, self.observed_time)
        self.context.put_long(self._emit_key, self.last_emit_close_time)
        self.context.put_long(self._store_time_key, self.store_time)


@processes(WINDOW_AGGREGATE)
class TimeWindowAggregateProcessor(WindowedAggregateProcessor):
    """Tumbling and hopping windows: a record updates every window it falls in, in
    order of start; a window already closed drops the record (counted once per window
    in ``dropped_records``, as Kafka does)."""

    def init(self) -> None:
        super().init()
        self.windows = self.node.params.windows
        self.close_offset_ms = self.windows.grace_ms

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            self.drop("null_key", record)
            return
        timestamp = record.timestamp
        self.observe(timestamp)
        close_time = self.close_time
        for window in self.windows.windows_for(timestamp):
            if window.end <= close_time:
                self.drop("late", record)
                continue
            previous = self.store.get(key, window.start)
            if previous is None:
                agg, new_timestamp = self.initial(), timestamp
                # as KStreamWindowAggregate: the initial aggregate is the old value (not cached)
                old = None if self.emitter.caching else agg
            else:
                old, agg, new_timestamp = previous[0], previous[0], max(timestamp, previous[1])
            new = self.aggregator(key, record.value, agg)
            self.store.put(key, window.start, new, new_timestamp)
            self.stored(window.start)
            self.forward_update(record, Windowed(key, window), (key, window.start), new, old,
                                new_timestamp)
        self.emit_closed(record.headers)

    def takes_batches(self, key_serde: Any) -> bool:
        """Whether :meth:`process_batch` may replace per-record processing: a cached
        ``count`` that emits on update forwards, per window, only the last change of
        the commit, so what it emits follows from each window's record count, largest
        timestamp and last record (under ``on_window_close`` finals are forwarded
        between records, and it does not); its input keys must be in the store's serde."""
        return (self.node.params.op is AggregateOp.COUNT and self.emitter.caching
                and self.store.key_serde == key_serde)

    def folds_batches(self, key_serde: Any) -> bool:
        """Whether :meth:`process_folds` may replace per-record processing: a cached
        ``reduce`` or ``aggregate`` that emits on update, for the reasons of
        :meth:`takes_batches` (what it emits follows from each window's values folded
        in processing order, its largest timestamp and last record)."""
        return (self.node.params.op is not AggregateOp.COUNT and self.emitter.caching
                and self.store.key_serde == key_serde)

    def process_batch(self, rows: pa.Table, topic: str) -> None:
        """Count ``rows`` (in processing order, keys as the store serializes them) per
        key and window, exactly as :meth:`process` one record at a time would: the
        observed time is the running maximum of the timestamps, a window already closed
        at a record drops it (counted per window), a record with no key is dropped
        before it moves the time. Windows are assigned for the whole batch at once, the
        touched windows read with one multi-get and written once, and the updates
        handed to the emitter in the order of each window's last update."""
        keyed = _with_keys(rows)
        self._drop_keyless(rows, keyed)
        if keyed.num_rows == 0:
            return
        stamps = keyed.column("timestamp").to_numpy()
        observed, row_of, starts, live = self._assign(stamps)
        self._drop_late(keyed, row_of, live)
        row_of, starts = row_of[live], starts[live]
        self.observe(int(observed[-1]))
        if len(starts) == 0:
            return
        updates = pa.table({"key": keyed.column("key").take(row_of), "start": starts,
                            "timestamp": stamps[row_of], "order": np.arange(len(starts))})
        windows = (updates.group_by(["key", "start"], use_threads=False)
                   .aggregate([("timestamp", "max"), ("order", "max"), ("order", "count")])
                   .sort_by("order_max"))
        last = keyed.take(pa.array(row_of[windows.column("order_max").to_numpy()]))
        self._add_counts(windows.column("key"), windows.column("start"), windows.column("order_count"),
                         windows.column("timestamp_max"), last, topic)
        self.stored(int(starts.max()))

    def process_folds(self, rows: pa.Table, topic: str, key_serde: Any, value_serde: Any) -> bool:
        """:meth:`process_batch` for a ``reduce`` or ``aggregate``: ``rows`` (records in
        processing order, keys and values as ``key_serde`` and ``value_serde`` wrote
        them) folded into their windows exactly as :meth:`process` one record at a time
        would, the initializer and the aggregator called in the same order; each touched
        window read with one multi-get and written once. Returns False, having changed
        nothing, when a key or value does not deserialize or a user function raises:
        the rows then go record by record, which reports it precisely."""
        keyed = _with_keys(rows)
        if keyed.num_rows == 0:
            self._drop_keyless(rows, keyed)
            return True
        try:
            keys = key_serde.deserialize_column(keyed.column("key"))
            values = value_serde.deserialize_column(keyed.column("value"))
        except Exception:  # noqa: BLE001 - record by record sends it to the handler
            return False
        stamps = keyed.column("timestamp").to_numpy()
        observed, row_of, starts, live = self._assign(stamps)
        update_rows, update_starts = row_of[live], starts[live]
        kbs = payloads(keyed.column("key"))
        windows: dict[tuple[bytes, int], int] = {}
        slots = [windows.setdefault((kbs[r], s), len(windows))
                 for r, s in zip(update_rows.tolist(), update_starts.tolist())]
        found = list(windows)
        previous = self.store.get_many_by_bytes([kb for kb, _ in found], [s for _, s in found])
        try:
            news, times = self._fold(previous, slots, update_rows.tolist(), stamps[update_rows].tolist(), keys, values)
        except Exception:  # noqa: BLE001 - record by record reports it precisely
            return False
        self._drop_keyless(rows, keyed)
        self._drop_late(keyed, row_of, live)
        self.observe(int(observed[-1]))
        if not found:
            return True
        slot = np.array(slots, dtype=np.int64)
        last = np.zeros(len(found), dtype=np.int64)   # each window's last update
        np.maximum.at(last, slot, np.arange(len(slots), dtype=np.int64))
        order = np.argsort(last).tolist()
        last_rows = update_rows[last[order]]
        self._update_windows([found[j][0] for j in order], [found[j][1] for j in order],
                             [previous[j] for j in order], [news[j] for j in order], [times[j] for j in order],
                             keyed.take(pa.array(last_rows)), topic, [keys[r] for r in last_rows.tolist()])
        self.stored(int(update_starts.max()))
        return True

    def _fold(self, previous: list, slots: list[int], rows: list[int], stamps: list[int], keys: list,
              values: list) -> tuple[list, list[int]]:
        """Each window's aggregate and timestamp after its updates (update ``i``: row
        ``rows[i]``, at ``stamps[i]``, into window ``slots[i]``), from what the store held
        (``previous``), as :meth:`process` computes them: a window without a value (none
        yet, or an aggregate of None deleted it) starts again from the initializer, at the
        record's timestamp."""
        aggregator, initial = self.aggregator, self.initial
        aggs: list = [_UNSET] * len(previous)
        times = [0] * len(previous)
        for j, r, stamp in zip(slots, rows, stamps):
            agg = aggs[j]
            if agg is _UNSET:
                prev = previous[j]
                agg, time = (initial(), stamp) if prev is None else (prev[0], max(stamp, prev[1]))
            elif agg is None:
                agg, time = initial(), stamp
            else:
                time = max(stamp, times[j])
            aggs[j] = aggregator(keys[r], values[r], agg)
            times[j] = time
        return aggs, times

    def _assign(self, stamps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The observed time after each record (the running maximum), and the records'
        windows: ``(observed, row_of, starts, live)``, ``live`` those still open at it."""
        observed = np.maximum.accumulate(np.maximum(stamps, self.observed_time))
        row_of, starts = self.windows.assign(stamps)
        live = starts + self.windows.size_ms > observed[row_of] - self.close_offset_ms
        return observed, row_of, starts, live

    def _drop_keyless(self, rows: pa.Table, keyed: pa.Table) -> None:
        if keyed.num_rows < rows.num_rows:
            first = pc.index(pc.is_null(rows.column("key")), True).as_py()
            self.drop("null_key", row_where(rows, first), rows.num_rows - keyed.num_rows)

    def _drop_late(self, keyed: pa.Table, row_of: np.ndarray, live: np.ndarray) -> None:
        if not live.all():
            self.drop("late", row_where(keyed, int(row_of[np.argmin(live)])), int(len(live) - live.sum()))

    def process_window_counts(self, rows: pa.Table, topic: str) -> None:
        """:meth:`process_batch` for rows a source reader pre-aggregated
        (:mod:`streamlib.spark.window_counts`): per key and window of an input range,
        ``window_records`` records on time by their running maximum (``timestamp`` the
        largest of them; ``entry``, ``partition`` and ``offset`` place the last in the
        processing order) and ``window_late`` late ones; a row without a key stands for
        records without one. A window already closed at the batch's start drops its
        records too; the rest is what :meth:`process_batch` does with the records."""
        no_key = pc.is_null(rows.column("key"))   # the range's records without a key
        null_keys = int(pc.sum(pc.if_else(no_key, rows.column("window_late"), 0)).as_py() or 0)
        if null_keys:
            self.drop("null_key", row_where(rows, pc.index(no_key, True).as_py()), null_keys)
        keyed = rows.filter(pc.invert(no_key))
        dropped = int(pc.sum(keyed.column("window_late")).as_py() or 0)
        on_time = keyed.column("window_records").to_numpy()
        starts = keyed.column("window_start").to_numpy()
        live = (on_time > 0) & (starts + self.windows.size_ms > self.close_time)
        dropped += int(on_time[~live].sum())
        if dropped:   # logged at a row of them (it names its input range's last record)
            first = pc.index(pc.greater(keyed.column("window_late"), 0), True).as_py()
            self.drop("late", row_where(keyed, first if first >= 0 else int(np.argmax(~live))), dropped)
        newest = pc.max(keyed.column("entry")).as_py()
        if newest is not None:
            self.observe(newest)
        if not live.any():
            return
        keyed = keyed.filter(pa.array(live))
        # the processing order: by entry, then input partition, offset and window start
        order = np.lexsort([keyed.column(c).to_numpy() for c in ("window_start", "offset", "partition", "entry")])
        keyed = keyed.take(pa.array(order))
        windows = (pa.table({"key": keyed.column("key"), "start": keyed.column("window_start"),
                             "records": keyed.column("window_records"), "timestamp": keyed.column("timestamp"),
                             "order": np.arange(keyed.num_rows)})
                   .group_by(["key", "start"], use_threads=False)
                   .aggregate([("records", "sum"), ("timestamp", "max"), ("order", "max")])
                   .sort_by("order_max"))
        last = keyed.take(windows.column("order_max"))
        self._add_counts(windows.column("key"), windows.column("start"), windows.column("records_sum"),
                         windows.column("timestamp_max"), last, topic)
        self.stored(int(pc.max(windows.column("start")).as_py()))

    def _add_counts(self, keys: pa.ChunkedArray, window_starts: pa.ChunkedArray, counts: pa.ChunkedArray,
                    newest: pa.ChunkedArray, last: pa.Table, topic: str) -> None:
        """Add ``counts`` to the windows (``keys`` as the store serializes them), read with
        one multi-get: :meth:`_update_windows`."""
        kbs, starts = keys.to_pylist(), window_starts.to_pylist()
        previous = self.store.get_many_by_bytes(kbs, starts)
        news = [(self.initial() if prev is None else prev[0]) + n for prev, n in zip(previous, counts.to_pylist())]
        times = [stamp if prev is None else max(stamp, prev[1]) for prev, stamp in zip(previous, newest.to_pylist())]
        self._update_windows(kbs, starts, previous, news, times, last, topic)

    def _update_windows(self, kbs: list[bytes], window_starts: list[int], previous: list, news: list,
                        timestamps: list[int], last: pa.Table, topic: str, keys: Optional[list] = None) -> None:
        """Write each window's new value and timestamp once (``kbs`` its key as the store
        serializes it, ``previous`` what the store held); the updates go to the emitter
        in the given order, each with the metadata of its window's ``last`` row
        (``keys``: the windows' keys, else deserialized from ``kbs``)."""
        store, key_serde = self.store, self.store.key_serde
        # many windows of a batch share few starts (windows are immutable; keys, which a
        # user's function could change, are decoded per window)
        window_at = self.windows.window_at
        windows_at = {start: window_at(start) for start in set(window_starts)}
        if keys is None:
            keys = [key_serde.deserialize(kb) for kb in kbs]
        for kb, key, start, new, timestamp, prev, partition, offset, headers in zip(
                kbs, keys, window_starts, news, timestamps, previous,
                last.column("partition").to_pylist(), last.column("offset").to_pylist(),
                last.column("headers").to_pylist()):
            old = None if prev is None else prev[0]
            store.put_by_bytes(kb, start, new, timestamp)
            record = Record(Windowed(key, windows_at[start]), None, timestamp,
                            tuple((h["key"], h["value"]) for h in headers) if headers else (),
                            topic, partition, offset)
            self.emitter.emit(record, (key, start), new, old, timestamp)

    def closed_windows(self, close_time: int) -> Optional[list[tuple[Windowed, Any, int]]]:
        size = self.windows.size_ms
        upper = close_time - size           # windows with start <= upper have end <= close time
        if upper < 0:
            return None
        lower = 0 if self.last_emit_close_time < 0 else max(0, self.last_emit_close_time - size) + 1
        return self.store.fetch_all(max(lower, self.live_from()), upper)


def _with_keys(rows: pa.Table) -> pa.Table:
    """The rows that have a key."""
    keys = rows.column("key")
    return rows if keys.null_count == 0 else rows.filter(pc.is_valid(keys))


def reducer_aggregator(reducer):
    """Kafka's ``aggregatorForReducer``: the first value starts the aggregate."""
    def aggregate(key: Any, value: Any, agg: Any) -> Any:
        return value if agg is None else reducer(agg, value)
    return aggregate

