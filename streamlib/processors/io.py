"""Where records enter and leave a sub-topology: sources (bytes -> objects) and
sinks (objects -> bytes, to a topic or a repartition)."""
from __future__ import annotations

import struct
from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc

from ..node_kinds import REPARTITION, SINK, SOURCE
from ..serdes import Serde
from .base import Processor, ProcessingError, ProcessorContext
from .drops import Where
from .record import Change, Record, decode_change, encode_change
from .registry import processes

_LONG = struct.Struct(">q")


def timestamps_valid(stamps: "pa.ChunkedArray", latest: float = float("inf")) -> bool:
    """Whether no timestamp of a batch is missing, negative or after ``latest`` (see
    ``SourceProcessor.latest_allowed``): only then may the batch be processed whole (per
    record, such a record is dropped by the timestamp rules or goes to the handler)."""
    if stamps.null_count:
        return False
    if len(stamps) == 0:
        return True
    bounds = pc.min_max(stamps).as_py()
    return bounds["min"] >= 0 and bounds["max"] <= latest


@processes(SOURCE)
class SourceProcessor(Processor):
    """Deserializes input records once; bad payloads go to the configured handler."""

    def init(self) -> None:
        config = self.context.config
        self.key_serde: Serde = self.node.params.key_serde
        self.value_serde: Serde = self.node.params.value_serde
        self.extractor = self.node.params.timestamp_extractor
        self.changes = self.node.params.changes
        self.handler = config.deserialization_exception_handler
        #: records of a user topic further ahead of the wall clock go to the handler
        self.max_future_skew_ms = None if self.node.params.internal else config.max_future_skew_ms

    def latest_allowed(self) -> float:
        """The newest timestamp a record may have now (``max_future_skew``)."""
        skew = self.max_future_skew_ms
        return float("inf") if skew is None else self.context.wall_clock_time + skew

    def receive(self, topic: str, partition: int, offset: int, timestamp: int,
                key: Optional[bytes], value: Optional[bytes], headers: tuple) -> None:
        try:
            key_obj = self.key_serde.deserialize(key)
            if self.changes:
                new, old = decode_change(value)
                value_obj = Change(self.value_serde.deserialize(new), self.value_serde.deserialize(old))
            else:
                value_obj = self.value_serde.deserialize(value)
        except Exception as exc:
            self._bad_record(topic, partition, offset, timestamp, key, value, headers, exc)
            return
        record = Record(key_obj, value_obj, timestamp, headers, topic, partition, offset)
        if self.extractor is not None:
            try:
                record.timestamp = int(self.extractor(key_obj, value_obj, timestamp))
            except Exception as exc:
                raise ProcessingError(f"timestamp extractor failed: {type(exc).__name__}: {exc}",
                                      record, self.name) from exc
        if record.timestamp is None or record.timestamp < 0:
            self._invalid_timestamp(record)
            return
        if record.timestamp > self.latest_allowed():
            self._bad_record(topic, partition, offset, timestamp, key, value, headers,
                             FutureTimestamp(self.context, record.timestamp), "future_timestamp")
            return
        self.context.count("records_in")
        if record.timestamp > self.context.stream_time:
            self.context.stream_time = record.timestamp
        self.forward(record)

    def _invalid_timestamp(self, record: Record) -> None:
        """Kafka's rules for a negative (or missing) timestamp: one a timestamp extractor
        returned drops the record, counted in ``dropped_records``; the record's own one
        stops the task whatever the deserialization handler (Kafka's default extractor,
        ``FailOnInvalidTimestamp``: it is not a deserialization error). To skip such
        records, give the source an extractor (``lambda key, value, ts: ts``)."""
        if self.extractor is not None:
            self.drop("invalid_timestamp", record, detail=f"its timestamp extractor returned {record.timestamp}")
            return
        raise ProcessingError(f"the record has an invalid (negative or missing) timestamp {record.timestamp}; "
                              "give the source a timestamp_extractor to replace it (or, returning it "
                              "unchanged, to drop such records)", record, self.name)

    def process(self, record: Record) -> None:
        self.forward(record)

    def takes_table(self, rows: pa.Table) -> bool:
        """Whether the batch child may take ``rows`` whole: always behind a repartition;
        from a user topic only when per-record processing would neither drop a record
        (timestamps all valid) nor send one to the deserialization handler (every key and
        value decodes and encodes back to the same bytes), so the outcome is the same."""
        if self.node.params.internal:
            return True
        if self.key_serde.check_batch is None or self.value_serde.check_batch is None:
            return False   # a serde that cannot vouch for a batch: record by record
        if not timestamps_valid(rows.column("timestamp"), self.latest_allowed()):
            return False
        return (self.key_serde.check_batch(rows.column("key"))
                and self.value_serde.check_batch(rows.column("value")))

    def receive_table(self, rows: pa.Table, topic: str, represents: Optional[str] = None) -> None:
        """Count the rows in and advance stream time, for a table of rows its one child
        takes at once (``Topology.batch_reader``); ``represents``: the column saying how
        many records each row stands for, in pre-aggregated rows
        (:class:`~streamlib.runtime.encoding.InputEncoding`)."""
        count = rows.num_rows if represents is None else int(pc.sum(rows.column(represents)).as_py() or 0)
        self.context.count("records_in", count)
        newest = pc.max(rows.column("timestamp")).as_py()
        if newest is not None and newest > self.context.stream_time:
            self.context.stream_time = newest

    def _bad_record(self, topic, partition, offset, timestamp, key, value, headers, exc,
                    reason: str = "deserialization_error") -> None:
        where = f"topic {topic!r} partition {partition} offset {offset}"
        if self.handler == "fail":
            what = "cannot deserialize" if reason == "deserialization_error" else "refusing"
            raise DeserializationFailure(
                f"{what} the record at {where} in {self.name}: {exc} "
                "(deserialization_exception_handler='fail')") from exc
        # counted as dropped, as Kafka Streams counts a skipped record
        if self.handler == "log_and_continue":
            self.drop(reason, Where(topic, partition, offset), detail=f"skipped: {exc}")
            return
        self.drop("dead_letter", Where(topic, partition, offset), detail=f"sent to the dead-letter topic: {exc}")
        dlq_headers = tuple(headers) + (
            ("streamlib.error", str(exc).encode()), ("streamlib.topic", topic.encode()),
            ("streamlib.partition", _LONG.pack(partition)), ("streamlib.offset", _LONG.pack(offset)))
        self.context.emit(self.context.config.dead_letter_topic, None, timestamp, key, value, dlq_headers)
        self.context.count("dead_letter_records")


class FutureTimestamp(ValueError):
    """A record's timestamp is more than ``max_future_skew`` ahead of the wall clock."""

    def __init__(self, context: "ProcessorContext", timestamp: int):
        skew = context.config.max_future_skew_ms
        super().__init__(f"its timestamp {timestamp} is more than max_future_skew ({skew} ms) ahead of "
                         f"the wall clock ({context.wall_clock_time}); it would move stream time there")


class DeserializationFailure(ProcessingError):
    """A record could not be deserialized and the handler is ``fail``."""


@processes(SINK, REPARTITION)
class SinkProcessor(Processor):
    """Serializes records and hands them to the task's output, bound for a topic."""

    def init(self) -> None:
        config = self.context.config
        params = self.node.params
        self.topic = params.topic
        self.key_serde: Serde = params.key_serde
        self.value_serde: Serde = params.value_serde
        self.partitioner = params.partitioner
        self.changes = params.changes

    def process(self, record: Record) -> None:
        try:
            key = self.key_serde.serialize(record.key)
            if self.changes:
                value = encode_change(self.value_serde.serialize(record.value.new),
                                      self.value_serde.serialize(record.value.old))
            else:
                value = self.value_serde.serialize(record.value)
        except Exception as exc:
            raise ProcessingError(f"cannot serialize record for topic {self.topic!r}: {exc}",
                                  record, self.name) from exc
        partition = None
        if self.partitioner is not None:
            partition = self.partitioner(record.key, record.value, self.context.topic_partitions(self.topic))
        self.context.output.append((self.topic, partition, record.timestamp, key, value, record.headers))
