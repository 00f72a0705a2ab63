"""Arrow glue between topic records and the ``streamlib`` data source's rows.

Pure pyarrow (no Spark): the reader turns :data:`~streamlib.topics.base.RECORD_SCHEMA`
tables into :data:`SOURCE_ARROW_SCHEMA` batches; the writer normalises sink rows to
:data:`~streamlib.topics.base.APPEND_SCHEMA` and splits them by (topic, partition).
"""
from __future__ import annotations

import time
from typing import Callable, Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamlib.topics.base import APPEND_SCHEMA, HEADER_TYPE, RECORD_SCHEMA
from streamlib.topics.partitioner import partition_array

#: Spark DDL of a record's headers, and of the rows the source produces.
HEADERS_DDL = "array<struct<key:string,value:binary>>"
SOURCE_DDL = ("topic string, partition int, offset long, timestamp long, key binary, "
              f"value binary, headers {HEADERS_DDL}")
SOURCE_ARROW_SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()),
                                 *RECORD_SCHEMA])
#: Columns a count's input rows have when its writers combined them per key
#: (:func:`streamlib.spark.preaggregate.combine_task_rows`), beyond the source rows'.
COMBINED_DDL = "records long, weight long"
COMBINED_FIELDS = [pa.field("records", pa.int64()), pa.field("weight", pa.int64())]
#: Columns the sink understands; ``value`` is required, the others optional.
SINK_COLUMNS = ("topic", "partition", "key", "value", "timestamp", "headers")


#: Source columns in schema order (a reader may ask for any subset, see :func:`source_columns`).
SOURCE_COLUMNS: tuple[str, ...] = tuple(SOURCE_ARROW_SCHEMA.names)
#: Below this many rows per stored frame on average, a read merges its frames into one
#: Arrow batch (a copy): every batch Spark receives has a fixed cost in the JVM.
MIN_BATCH_ROWS = 8192


def source_batches(records: pa.Table, topic: str, partition: int,
                   columns: Sequence[str] = SOURCE_COLUMNS) -> Iterator[pa.RecordBatch]:
    """Record batches of source rows: ``records`` (RECORD_SCHEMA) plus topic/partition,
    with only ``columns``, in that order.

    The record columns stay zero-copy views of the stored frames (unless the frames are
    small, see :data:`MIN_BATCH_ROWS`), and nothing here calls ``pa.array`` or
    ``pa.scalar``: those import pandas, which costs a fresh Python worker half a second.

    >>> from streamlib.topics.base import records_to_arrow
    >>> t = records_to_arrow([(b"k", b"v", 5, ())]).add_column(0, "offset", pa.array([7]))
    >>> [b.to_pylist() for b in source_batches(t, "words", 2, ["partition", "offset", "value"])]
    [[{'partition': 2, 'offset': 7, 'value': b'v'}]]
    """
    schema = pa.schema([SOURCE_ARROW_SCHEMA.field(c) for c in columns])
    stored = records.select([c for c in columns if c in RECORD_SCHEMA.names])
    if stored.num_columns and records.column(0).num_chunks > 1 \
            and records.num_rows < MIN_BATCH_ROWS * records.column(0).num_chunks:
        stored = stored.combine_chunks()
    for batch in (stored.to_batches() if stored.num_columns else _row_counts(records)):
        n = batch.num_rows
        if n == 0:
            continue
        arrays = [constant_string(topic, n) if c == "topic" else
                  constant_int32(partition, n) if c == "partition" else batch.column(c)
                  for c in columns]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _row_counts(records: pa.Table) -> Iterator[pa.RecordBatch]:
    """Batches with as many rows as ``records`` has, for a read of topic/partition only."""
    return iter(records.select(["offset"]).to_batches())


def constant_string(text: str, n: int) -> pa.Array:
    """``text`` ``n`` times, built from buffers (no ``pa.array``: see :func:`source_batches`)."""
    data = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(data))
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def constant_int32(value: int, n: int) -> pa.Array:
    return pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(np.full(n, value, np.int32))])


def to_append_table(rows: pa.Table, now_ms: Optional[int] = None) -> pa.Table:
    """Sink rows → APPEND_SCHEMA: strings become bytes, a missing/null timestamp is
    ``now_ms`` (default: the wall clock), missing/null headers are empty.

    >>> rows = pa.table({"key": ["a"], "value": [b"1"]})
    >>> to_append_table(rows, now_ms=9).to_pylist()
    [{'timestamp': 9, 'key': b'a', 'value': b'1', 'headers': []}]
    """
    n = rows.num_rows
    now = int(time.time() * 1000) if now_ms is None else now_ms
    names = rows.column_names
    stamps = _timestamps_ms(rows.column("timestamp")) if "timestamp" in names else None
    stamps = pc.fill_null(stamps, now) if stamps is not None else pa.repeat(pa.scalar(now, pa.int64()), n)
    key = rows.column("key").cast(pa.binary()) if "key" in names else pa.nulls(n, pa.binary())
    headers = (pc.fill_null(rows.column("headers").cast(HEADER_TYPE), pa.scalar([], HEADER_TYPE))
               if "headers" in names else pa.array([[]] * n, HEADER_TYPE))
    return pa.Table.from_arrays([stamps, key, rows.column("value").cast(pa.binary()), headers],
                                schema=APPEND_SCHEMA)


def _timestamps_ms(column: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_timestamp(column.type):
        return column.cast(pa.timestamp("ms", column.type.tz)).cast(pa.int64())
    return column.cast(pa.int64())


def split_by_partition(rows: pa.Table, topic: Optional[str],
                       num_partitions: Callable[[str], int],
                       now_ms: Optional[int] = None) -> Iterator[tuple[str, int, pa.Table]]:
    """Split sink rows into ``(topic, partition, APPEND_SCHEMA table)`` groups.

    ``topic`` overrides a ``topic`` column. A null or missing ``partition`` is the Java
    producer's murmur2 partition of the key (round robin for null keys, in row order).
    Groups come out in a stable order: topics by first appearance, partitions ascending.

    >>> rows = pa.table({"key": [b"a", b"b", b"a"], "value": [b"1", b"2", b"3"]})
    >>> [(t, p, g.num_rows) for t, p, g in split_by_partition(rows, "out", lambda t: 1)]
    [('out', 0, 3)]
    """
    if topic is not None:
        yield from _split_topic(rows, topic, num_partitions(topic), now_ms)
        return
    topics = rows.column("topic")
    if topics.null_count:
        raise ValueError("sink rows need a non-null 'topic' (or the writer option 'topic')")
    for name in pc.unique(topics).to_pylist():
        subset = rows.filter(pc.equal(topics, name))
        yield from _split_topic(subset, name, num_partitions(name), now_ms)


def _split_topic(rows: pa.Table, topic: str, n: int,
                 now_ms: Optional[int]) -> Iterator[tuple[str, int, pa.Table]]:
    records = to_append_table(rows, now_ms)
    parts = partition_array(records.column("key"), n)
    if "partition" in rows.column_names:
        given = rows.column("partition").combine_chunks().cast(pa.int32())
        parts = pc.coalesce(given, pa.array(parts, pa.int32())).to_numpy(zero_copy_only=False)
    bad = (parts < 0) | (parts >= n)
    if bad.any():
        raise ValueError(f"partition {int(parts[bad][0])} out of range for topic {topic!r} "
                         f"with {n} partitions")
    for p in np.unique(parts):
        yield topic, int(p), records.filter(pa.array(parts == p))
