"""Writing DataFrames to topics: ``df.write`` / ``df.writeStream`` ``.format("streamlib")``.

Input columns: ``value`` (binary or string, required), ``key`` (optional), ``topic``
(or the option ``topic``, which wins), ``partition`` (int; null or absent: the Java
producer's murmur2 of the key, round robin for null keys), ``timestamp`` (long ms or
a timestamp; null or absent: now) and ``headers`` (array<struct<key:string,
value:binary>>).

Each Spark task appends each (topic, partition) group of its rows with one
``append(..., producer_id=f"{sink_id}/{task partition}", sequence=batch id)``, so a
re-run of a micro-batch leaves the local log as if it ran once. Options: ``bootstrap``
and the JSON configs as for the reader, ``topic``, ``sinkId`` (default: the streaming
query id, which lives in the checkpoint) and, for batch writes, ``sequence`` (an
integer that makes a batch write idempotent the same way).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping, Optional

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (DataSourceArrowWriter, DataSourceStreamArrowWriter,
                                    WriterCommitMessage)
from pyspark.sql.types import StructType

from streamlib.spark.arrow import SINK_COLUMNS, split_by_partition
from streamlib.topics.spec import BackendSpec

#: Task-local properties Spark sets for streaming jobs.
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"


@dataclass(frozen=True)
class TopicWriteStats(WriterCommitMessage):
    """What one task did: records appended, and records skipped as already written."""

    appended: int = 0
    skipped: int = 0


@dataclass(frozen=True)
class SinkOptions:
    """Parsed writer options (see the module docstring)."""

    backend: BackendSpec
    topic: Optional[str]
    sink_id: Optional[str]
    sequence: Optional[int]

    @classmethod
    def parse(cls, options: Mapping[str, str], schema: StructType, overwrite: bool) -> "SinkOptions":
        """Check the options and the input columns; raise ``ValueError`` naming the problem."""
        if overwrite:
            raise ValueError("topics are append-only: write with mode('append')")
        names = schema.fieldNames()
        unknown = [n for n in names if n not in SINK_COLUMNS]
        if unknown:
            raise ValueError(f"the streamlib sink does not know column(s) {unknown}; "
                             f"expected {list(SINK_COLUMNS)}")
        if "value" not in names:
            raise ValueError("the streamlib sink needs a 'value' column")
        topic = options.get("topic")
        if topic is None and "topic" not in names:
            raise ValueError("the streamlib sink needs a 'topic' column or the option 'topic'")
        sequence = options.get("sequence")
        if sequence is not None and not sequence.lstrip("-").isdigit():
            raise ValueError(f"option sequence must be an integer, got {sequence!r}")
        spec = BackendSpec.from_options(options)
        backend = spec.open()
        if topic is not None:
            backend.num_partitions(topic)  # raises TopicNotFound("unknown topic 'x'")
        return cls(spec, topic, options.get("sinkId"),
                   int(sequence) if sequence is not None else None)


def write_task(batches: Iterator[pa.RecordBatch], options: SinkOptions, sink_id: Optional[str],
               sequence: Optional[int]) -> TopicWriteStats:
    """Append one task's rows, one ``append`` per (topic, partition); idempotent per
    ``(sink_id/task partition, sequence)`` when both are given."""
    batches = list(batches)
    if not batches or not any(b.num_rows for b in batches):
        return TopicWriteStats()
    rows = pa.Table.from_batches(batches)
    backend = options.backend.open()
    producer = None if sink_id is None or sequence is None else \
        f"{sink_id}/{TaskContext.get().partitionId()}"
    appended = skipped = 0
    for topic, partition, records in split_by_partition(rows, options.topic, backend.num_partitions):
        if backend.append(topic, partition, records, producer_id=producer,
                          sequence=sequence if producer else None):
            appended += records.num_rows
        else:
            skipped += records.num_rows
    backend.flush()
    return TopicWriteStats(appended, skipped)


class TopicBatchWriter(DataSourceArrowWriter):
    """``df.write.format("streamlib").mode("append")``."""

    def __init__(self, options: SinkOptions):
        self.options = options

    @classmethod
    def create(cls, options: Mapping[str, str], schema: StructType, overwrite: bool) -> "TopicBatchWriter":
        return cls(SinkOptions.parse(options, schema, overwrite))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TopicWriteStats:
        sink_id = self.options.sink_id or "streamlib-batch"
        return write_task(iterator, self.options, sink_id, self.options.sequence)


class TopicStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("streamlib")``; the micro-batch id is the sequence."""

    def __init__(self, options: SinkOptions):
        self.options = options

    @classmethod
    def create(cls, options: Mapping[str, str], schema: StructType, overwrite: bool) -> "TopicStreamWriter":
        # ``overwrite`` is Spark's "complete" output mode: like Kafka's sink, append it all.
        return cls(SinkOptions.parse(options, schema, overwrite=False))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TopicWriteStats:
        context = TaskContext.get()
        sink_id = self.options.sink_id or context.getLocalProperty(QUERY_ID_PROPERTY)
        batch_id = context.getLocalProperty(BATCH_ID_PROPERTY)
        return write_task(iterator, self.options, sink_id,
                          int(batch_id) if batch_id is not None else None)

