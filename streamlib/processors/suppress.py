"""``KTable.suppress``: Kafka Streams' ``KTableSuppressProcessor``.

``Suppressed.until_window_closes()`` (final results of a windowed table): updates wait
in a change-logged buffer ordered by (window end, windowed key bytes in Kafka's wire
format); once the processor's observed stream time − grace reaches a window's end, its
latest update is forwarded, exactly once. Deletes (sessions merged away) are dropped:
nothing final was ever said about them.

``Suppressed.until_time_limit(d)``: a key's updates wait from the time of the first one
buffered (the key keeps that time while it waits, as Kafka's buffer does) until the
observed stream time reaches it + ``d``; then the latest is forwarded, deletes included,
with the value the key had before the first as its old value.

A forwarded update keeps its own timestamp and headers (Kafka's buffer keeps the
record's context). A bounded buffer (``BufferConfig``), once over its records or bytes
after the expired entries left, emits its oldest entries early or fails the task.
"""
from __future__ import annotations

from ..node_kinds import SUPPRESS
from .base import Processor, ProcessingError
from .record import Change, Record, decode_change, decode_headers, encode_change, encode_headers
from .stores.buffer import TimeOrderedBuffer
from .registry import processes

#: bytes a buffered entry costs beyond its key and value: its time and timestamp
_ENTRY_OVERHEAD = 16
#: ``_entry``'s default: the update's own old value
_OWN_OLD = object()


def _change_end(new: bytes | None, old: bytes | None) -> int:
    """Where :func:`encode_change`'s payload ends (the headers follow it)."""
    return 8 + (0 if new is None else len(new)) + (0 if old is None else len(old))


@processes(SUPPRESS)
class SuppressProcessor(Processor):
    """Holds a table's updates back; see the module docstring."""

    def init(self) -> None:
        params = self.node.params
        self.buffer: TimeOrderedBuffer = self.context.store(params.store)
        self.grace_ms = params.grace_ms
        self.final = params.final
        self.buffer.keyed = not self.final
        self.max_records = params.max_records
        self.max_bytes = params.max_bytes
        self.emit_early = params.emit_early
        self.bounded = self.max_records is not None or self.max_bytes is not None
        config = self.context.config
        key_serde = params.key_serde
        windowed = params.windowed_keys
        # windowed keys buffered in Kafka's windowed wire format, so ties order as in Kafka
        self.key_serde = windowed.serde(key_serde) if windowed is not None else key_serde
        self.value_serde = params.value_serde
        self._time_key = f"{self.name}.observed_time"
        self._records_key, self._bytes_key = f"{self.name}.records", f"{self.name}.bytes"
        self.observed_time = self.context.get_long(self._time_key)

    # -- putting -------------------------------------------------------------------------
    def process(self, record: Record) -> None:
        if record.timestamp > self.observed_time:
            self.observed_time = record.timestamp
        if self.final and not self.bounded:
            self.buffer.put(*self._entry(record))
        else:
            self._put_counted(record)
        self._evict()
        if self.bounded:
            self._enforce_bounds(record)

    def _entry(self, record: Record, old: object = _OWN_OLD, time: int | None = None
               ) -> tuple[int, bytes, int, bytes]:
        """The buffer entry of an update: (time, key, timestamp, change + headers); the
        old value serialized, or ``_OWN_OLD`` for the update's own."""
        change: Change = record.value
        serialize = self.value_serde.serialize
        old_bytes = serialize(change.old) if old is _OWN_OLD else old
        payload = encode_change(serialize(change.new), old_bytes) + encode_headers(record.headers)
        if time is None:
            time = record.key.window.end if self.final else record.timestamp
        return time, self.key_serde.serialize(record.key), record.timestamp, payload

    def _put_counted(self, record: Record) -> None:
        """Put one update — under a time limit a held key keeps its first time and the
        old value from before it (Kafka's ``priorValue``) — and count the buffer's
        records and bytes."""
        kb = self.key_serde.serialize(record.key)
        time = None if self.final else self.buffer.time_of(kb)
        held = None if time is None else self.buffer.get(time, kb)
        entry = (self._entry(record) if held is None
                 else self._entry(record, decode_change(held)[1], time))
        replaced = self.buffer.replace(*entry)
        records, size = self._counts()
        if replaced is None:
            records += 1
            size += len(entry[1]) + _ENTRY_OVERHEAD + len(entry[3])
        else:
            size += len(entry[3]) - len(replaced)
        self._set_counts(records, size)

    # -- taking --------------------------------------------------------------------------
    def process_many(self, records: list[Record]) -> None:
        """A commit's updates at once: all put, then one eviction. That forwards what
        one by one would, in the same order, as long as no update is for a window the
        updates before it closed (an eviction step only ever takes entries above the
        previous step's bound, so the steps concatenate into one sorted eviction). A
        time-windowed aggregate's commit qualifies: it dropped the records of windows
        already closed when it saw them. Anything else (and a time limit or a bounded
        buffer) goes one by one."""
        if not records:
            return
        if not self.final or self.bounded:
            super().process_many(records)
            return
        grace, observed = self.grace_ms, self.observed_time
        for record in records:
            if record.key.window.end <= observed - grace:
                super().process_many(records)
                return
            if record.timestamp > observed:
                observed = record.timestamp
        try:
            entries = [self._entry(record) for record in records]
        except Exception:  # noqa: BLE001 - one by one names the record that fails
            super().process_many(records)
            return
        self.buffer.put_many(entries)
        self.observed_time = observed
        self._evict()

    def advance_time(self, stream_time: int) -> None:
        if stream_time > self.observed_time:
            self.observed_time = stream_time
            self._evict()

    def watermark(self) -> int:
        return self.observed_time - self.grace_ms

    def _evict(self) -> None:
        for key, timestamp, value in self.buffer.evict(self.observed_time - self.grace_ms):
            self._emit(key, timestamp, value)

    def _emit(self, key: bytes, timestamp: int, value: bytes) -> None:
        if self.bounded:
            records, size = self._counts()
            self._set_counts(records - 1, size - len(key) - _ENTRY_OVERHEAD - len(value))
        new, old = decode_change(value)
        if new is None and self.final:
            return      # Kafka's final results drop deletes (safeToDropTombstones)
        deserialize = self.value_serde.deserialize
        headers = decode_headers(value, _change_end(new, old))
        self.forward(Record(self.key_serde.deserialize(key),
                            Change(None if new is None else deserialize(new),
                                   None if old is None else deserialize(old)), timestamp, headers))

    def _enforce_bounds(self, record: Record) -> None:
        """Kafka's ``enforceConstraints`` after the expired entries left: emit the oldest
        early, or fail naming the buffer's fill."""
        while self._over_capacity():
            records, size = self._counts()
            if not self.emit_early:
                raise ProcessingError(
                    f"suppress buffer exceeded its max capacity: currently [{records}/{self.max_records}] "
                    f"records and [{size}/{self.max_bytes}] bytes", record, self.name)
            taken = self.buffer.evict_oldest()
            if taken is None:
                return
            self._emit(*taken)

    def _over_capacity(self) -> bool:
        records, size = self._counts()
        return ((self.max_records is not None and records > self.max_records)
                or (self.max_bytes is not None and size > self.max_bytes))

    # -- state ---------------------------------------------------------------------------
    def _counts(self) -> tuple[int, int]:
        get = self.context.get_long
        return max(get(self._records_key), 0), max(get(self._bytes_key), 0)

    def _set_counts(self, records: int, size: int) -> None:
        self.context.put_long(self._records_key, records)
        self.context.put_long(self._bytes_key, size)

    def flush(self) -> None:
        self.context.put_long(self._time_key, self.observed_time)
