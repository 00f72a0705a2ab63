"""``KTable.suppress(Suppressed.until_window_closes())``: final results of a windowed
table (Kafka Streams' ``KTableSuppressProcessor`` with final-results semantics).

Updates wait in a change-logged buffer ordered by (window end, windowed key bytes in
Kafka's wire format); once the processor's observed stream time − grace reaches a
window's end, its latest update is forwarded, exactly once. Deletes (sessions merged
away) are dropped: nothing final was ever said about them.
"""
from __future__ import annotations

from ..node_kinds import SUPPRESS
from .base import Processor
from .record import Change, Record, decode_change, encode_change
from .stores.buffer import TimeOrderedBuffer
from .registry import processes


@processes(SUPPRESS)
class SuppressProcessor(Processor):
    """Holds a windowed table's updates until their window closes."""


    def init(self) -> None:
        params = self.node.params
        self.buffer: TimeOrderedBuffer = self.context.store(params["store"])
        self.grace_ms = params["grace_ms"]
        config = self.context.config
        # keys buffered in Kafka's windowed wire format, so ties order as in Kafka
        self.key_serde = params["windowed_keys"].serde(params["key_serde"] or config.default_key_serde)
        self.value_serde = params["value_serde"] or config.default_value_serde
        self._time_key = f"{self.name}.observed_time"
        self.observed_time = self.context.get_long(self._time_key)

    def process(self, record: Record) -> None:
        if record.timestamp > self.observed_time:
            self.observed_time = record.timestamp
        self.buffer.put(*self._entry(record))
        self._evict()

    def _entry(self, record: Record) -> tuple[int, bytes, int, bytes]:
        """The buffer entry of an update: (window end, windowed key, timestamp, change)."""
        change: Change = record.value
        serialize = self.value_serde.serialize
        return (record.key.window.end, self.key_serde.serialize(record.key), record.timestamp,
                encode_change(serialize(change.new), serialize(change.old)))

    def process_many(self, records: list[Record]) -> None:
        """A commit's updates at once: all put, then one eviction. That forwards what
        one by one would, in the same order, as long as no update is for a window the
        updates before it closed (an eviction step only ever takes entries above the
        previous step's bound, so the steps concatenate into one sorted eviction). A
        time-windowed aggregate's commit qualifies: it dropped the records of windows
        already closed when it saw them. Anything else goes one by one."""
        if not records:
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
        deserialize = self.value_serde.deserialize
        for key, timestamp, value in self.buffer.evict(self.observed_time - self.grace_ms):
            new, old = decode_change(value)
            if new is not None:
                self.forward(Record(self.key_serde.deserialize(key),
                                    Change(deserialize(new), deserialize(old)), timestamp))

    def flush(self) -> None:
        self.context.put_long(self._time_key, self.observed_time)
