"""Arrow glue between topic records and the ``streamlib`` data source's rows.

Pure pyarrow (no Spark): the reader turns :data:`~streamlib.topics.base.RECORD_SCHEMA`
tables into :data:`SOURCE_ARROW_SCHEMA` batches; the writer normalises sink rows to
:data:`~streamlib.topics.base.APPEND_SCHEMA` and splits them by (topic, partition).
"""
from __future__ import annotations

import time
from typing import Callable, Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamlib.topics.base import APPEND_SCHEMA, HEADER_TYPE, RECORD_SCHEMA
from streamlib.topics.partitioner import partition_array

#: Spark DDL of the rows the source produces.
SOURCE_DDL = ("topic string, partition int, offset long, timestamp long, key binary, "
              "value binary, headers array<struct<key:string,value:binary>>")
SOURCE_ARROW_SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()),
                                 *RECORD_SCHEMA])
#: Columns the sink understands; ``value`` is required, the others optional.
SINK_COLUMNS = ("topic", "partition", "key", "value", "timestamp", "headers")


def source_batches(records: pa.Table, topic: str, partition: int) -> Iterator[pa.RecordBatch]:
    """Record batches of source rows: ``records`` (RECORD_SCHEMA) plus topic/partition.

    >>> from streamlib.topics.base import records_to_arrow
    >>> t = records_to_arrow([(b"k", b"v", 5, ())]).add_column(0, "offset", pa.array([7]))
    >>> [b.to_pylist()[0]["offset"] for b in source_batches(t, "words", 2)]
    [7]
    """
    n = records.num_rows
    table = pa.Table.from_arrays(
        [pa.repeat(pa.scalar(topic, pa.string()), n), pa.repeat(pa.scalar(partition, pa.int32()), n),
         *(records.column(f.name) for f in RECORD_SCHEMA)],
        schema=SOURCE_ARROW_SCHEMA)
    return iter(table.to_batches())


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
