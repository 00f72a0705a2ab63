"""Stream–stream joins (Kafka Streams ≥ 3.1's ``KStreamKStreamJoin`` and ``KStreamJoinWindow``).

A join of two streams is five nodes: a ``join_window`` per side, which forwards each
record and then keeps it in its side's window store (duplicates retained), a
``stream_join`` per side, which joins a record with the other side's records within
``[ts − before, ts + after]`` (``[ts − after, ts + before]`` for the right side), and a
``merge`` of both results. Results carry the larger of both timestamps.

Left and outer joins hold a record that found no partner in the outer-join buffer
(:class:`~streamlib.processors.stores.OuterJoinBuffer`, shared by both sides) and emit
``joiner(v, None)`` only once its window has closed (the observed stream time passed
its time + the look-ahead + grace), unless a partner arrives first. The stream time is
shared by both sides of the join (task state, so it survives restarts); under Spark a
batch boundary advances it too (``advance_time``) so windows close on idle tasks.
"""
from __future__ import annotations

from typing import Any, Optional

from ..node_kinds import JOIN_WINDOW, STREAM_JOIN, STREAM_OUTER_JOIN
from .base import Processor
from .record import Record
from .registry import processes

#: Kafka's ``Long.MAX_VALUE`` start of the buffer's min time: nothing buffered yet
_NO_MIN_TIME = 1 << 62


@processes(JOIN_WINDOW)
class JoinWindowProcessor(Processor):
    """Kafka's ``KStreamJoinWindow``: forward the record, then keep it in this side's
    store (records without a key are forwarded but never kept)."""

    def init(self) -> None:
        params = self.node.params
        self.store = self.context.store(params.store)
        self.retention_ms = params.retention_ms
        self._time_key = f"{params.store}.observed_time"

    def process(self, record: Record) -> None:
        self.forward(record)
        if record.key is None or record.value is None:
            return
        observed = self.context.get_long(self._time_key)
        if record.timestamp > observed:
            observed = record.timestamp
            self.context.put_long(self._time_key, observed)
        # Kafka's segmented store never shows a record older than observed − retention
        if record.timestamp > observed - self.retention_ms:
            self.store.put(record.key, record.value, record.timestamp)

    def flush(self) -> None:
        observed = self.context.get_long(self._time_key)
        if observed >= 0:
            self.store.expire(observed - self.retention_ms + 1)


@processes(STREAM_JOIN)
class StreamJoinProcessor(Processor):
    """One side of a stream–stream join; see the module docstring."""

    def init(self) -> None:
        params = self.node.params
        context = self.context
        self.other = context.store(params.other_store)
        self.other_retention_ms = params.retention_ms
        self._other_time_key = f"{params.other_store}.observed_time"
        self.joiner = params.joiner
        self.left_side = params.left_side
        self.outer = params.outer
        self.before_ms, self.after_ms = params.before_ms, params.after_ms
        if not self.left_side:   # the right side looks the other way
            self.before_ms, self.after_ms = self.after_ms, self.before_ms
        self.windows_before_ms, self.windows_after_ms = params.before_ms, params.after_ms
        self.grace_ms = params.grace_ms
        self._time_key = f"{params.join}.stream_time"
        self._min_key = f"{params.join}.min_time"
        outer_store = params.outer_store
        self.buffer = context.store(outer_store) if outer_store else None
        config = context.config
        self.key_serde = params.key_serde
        self.this_serde = params.value_serde
        self.other_serde = params.other_value_serde

    # -- shared time ---------------------------------------------------------------------
    @property
    def stream_time(self) -> int:
        return self.context.get_long(self._time_key)

    def _advance(self, timestamp: int) -> int:
        now = self.stream_time
        if timestamp > now:
            self.context.put_long(self._time_key, timestamp)
            return timestamp
        return now

    def _min_time(self) -> int:
        """A lower bound of the buffered times (Kafka's ``TimeTracker.minTime``), kept
        as task state so that it commits and restores with the buffer."""
        return self.context.get_long(self._min_key, _NO_MIN_TIME)

    # -- records -------------------------------------------------------------------------
    def process(self, record: Record) -> None:
        key, value, ts = record.key, record.value, record.timestamp
        stream_time = self._advance(ts)
        if self.outer and key is None and value is not None:
            self.forward(record.with_value(self.joiner(value, None)))
            return
        if key is None or value is None:
            self.drop("null_key" if key is None else "null_value", record)
            return
        if ts == stream_time and self.buffer is not None:
            self._emit_non_joined(stream_time, record.headers)
        time_from = max(0, ts - self.before_ms)
        time_to = max(0, ts + self.after_ms)
        # the other store shows nothing older than its observed time − retention (Kafka)
        other_time = self.context.get_long(self._other_time_key)
        visible_from = max(time_from, other_time - self.other_retention_ms + 1)
        matches = self.other.fetch(key, visible_from, time_to) if time_to >= visible_from else []
        kb: Optional[bytes] = None
        for other_ts, other_value, _ in matches:
            if self.buffer is not None:
                kb = kb if kb is not None else self.key_serde.serialize(key)
                self.buffer.remove(other_ts, not self.left_side, kb)
            self.forward(Record(key, self.joiner(value, other_value), max(ts, other_ts), record.headers,
                                record.topic, record.partition, record.offset))
        if matches or not self.outer:
            return
        if self.buffer is None or time_to < stream_time:
            self.forward(record.with_value(self.joiner(value, None)))
            return
        if ts < self._min_time():
            self.context.put_long(self._min_key, ts)
        self.buffer.add(ts, self.left_side, self.key_serde.serialize(key), self.this_serde.serialize(value))

    def _emit_non_joined(self, stream_time: int, headers: tuple) -> None:
        """Kafka's ``emitNonJoinedOuterRecords``: forward ``joiner(v, None)`` for every
        buffered record whose window has closed, oldest first, and drop it.

        Like Kafka's list-value outer-join store, the scan visits one entry per buffered
        value (not one per key): the minimum time is where it stopped, so when several
        records share time, side and key, the scan stops at the second of them once both
        sides' windows are open, and the next trigger starts from that time."""
        if self._min_time() + self.after_ms + self.grace_ms >= stream_time:
            return
        minimum = _NO_MIN_TIME
        left_open = right_open = False
        for store_key, time, left, kb, values in list(self.buffer.entries()):
            minimum = time
            if left_open and right_open:
                break
            look_ahead = self.windows_after_ms if left else self.windows_before_ms
            if time + look_ahead + self.grace_ms >= stream_time:
                if left:
                    left_open = True
                else:
                    right_open = True
                if left_open and right_open and len(values) > 1:
                    break   # Kafka stops at this key's next value: the minimum stays here
                continue
            key = self.key_serde.deserialize(kb)
            # The joiner is always called (this side's value, other side's value):
            # a buffered record of the other side gets this side's None first.
            this_serde, other_serde = ((self.this_serde, self.other_serde)
                                       if left == self.left_side else (self.other_serde, self.this_serde))
            for raw in values:
                buffered = this_serde.deserialize(raw)
                joined = (self.joiner(buffered, None) if left == self.left_side
                          else self.joiner(None, buffered))
                self.forward(Record(key, joined, time, headers))
            self.buffer.delete_key(store_key)
        self.context.put_long(self._min_key, minimum)

    def advance_time(self, stream_time: int) -> None:
        """A batch boundary under Spark: the application's stream time closes windows of
        this task's buffered records too, even if none of its own records arrive."""
        if self.buffer is not None and stream_time > self.stream_time:
            self._emit_non_joined(self._advance(stream_time), ())

    def watermark(self) -> int:
        return self.stream_time - self.grace_ms


@processes(STREAM_OUTER_JOIN)
class OuterStreamJoinProcessor(StreamJoinProcessor):
    """A side of a left or outer stream–stream join: acts on stream time (its task runs
    at every Spark batch so that closed windows emit their unmatched records)."""

