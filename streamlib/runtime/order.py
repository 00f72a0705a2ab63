"""The order a task processes its input in (DESIGN.md, "Time and order").

Records of one input partition are processed in offset order; across partitions the
task takes the head with the smallest timestamp next (Kafka Streams' rule), ties
going to the partition that sorts first. The order depends only on the rows, so a
re-run of a batch processes the same records in the same order.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def processing_order(table: pa.Table) -> np.ndarray:
    """Row indices of ``table`` (columns topic, partition, offset, timestamp) in processing order."""
    if table.num_rows == 0:
        return np.empty(0, dtype=np.int64)
    topics = pc.dictionary_encode(table.column("topic")).combine_chunks()
    topic_rank = np.empty(len(topics.dictionary), dtype=np.int64)
    topic_rank[pc.sort_indices(topics.dictionary).to_numpy()] = np.arange(len(topics.dictionary))
    origin = (topic_rank[topics.indices.to_numpy(zero_copy_only=False)] << 32
              | table.column("partition").to_numpy().astype(np.int64))
    by_origin = np.lexsort((table.column("offset").to_numpy(), origin))
    origin = origin[by_origin]
    if origin[0] == origin[-1]:   # one partition: offset order
        return by_origin
    timestamps = table.column("timestamp").to_numpy()[by_origin]
    starts = np.flatnonzero(np.r_[True, origin[1:] != origin[:-1]])
    ends = np.r_[starts[1:], len(origin)]
    # The greedy merge cannot take a record before the ones ahead of it in its run, so
    # a record competes with the largest timestamp up to it in its run: the greedy
    # order is a stable sort by that running maximum (ties: earlier run, then offset),
    # even when a run's timestamps are out of order.
    entry = np.empty_like(timestamps)
    for start, end in zip(starts, ends):
        np.maximum.accumulate(timestamps[start:end], out=entry[start:end])
    return by_origin[np.argsort(entry, kind="stable")]
