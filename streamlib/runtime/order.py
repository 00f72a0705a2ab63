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


def processing_order(table: pa.Table, together: frozenset[str] = frozenset()) -> np.ndarray:
    """Row indices of ``table`` (columns topic, partition, offset, timestamp) in processing
    order. The rows of the topics in ``together`` are one sequence per partition, in offset
    order across those topics: a foreign-key self join's left values and answers, which
    its sub-topology numbers in the order Kafka Streams' driver takes them
    (``Topology.fk_self_join_inputs``).

    >>> t = pa.table({"topic": ["l", "r", "l"], "partition": [0, 0, 0], "offset": [2, 1, 0],
    ...               "timestamp": [5, 9, 5]})
    >>> processing_order(t).tolist(), processing_order(t, frozenset({"l", "r"})).tolist()
    ([2, 0, 1], [2, 1, 0])
    """
    if table.num_rows == 0:
        return np.empty(0, dtype=np.int64)
    topics = pc.dictionary_encode(table.column("topic")).combine_chunks()
    topic_rank = np.empty(len(topics.dictionary), dtype=np.int64)
    topic_rank[pc.sort_indices(topics.dictionary).to_numpy()] = np.arange(len(topics.dictionary))
    if together:
        joined = np.asarray(pc.is_in(topics.dictionary, pa.array(sorted(together), pa.string())), dtype=bool)
        if joined.any():
            topic_rank[joined] = topic_rank[joined].min()
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


def processing_prefix(timestamps: list[np.ndarray], limit: int) -> list[int]:
    """How many records of each input partition are among the first ``limit`` of the
    processing order: ``timestamps[i]`` is partition ``i``'s in offset order, the
    partitions listed in the order ties go by (:func:`processing_order`'s rule).

    A micro-batch cut there holds a prefix of every task's processing order, so where
    batches are cut does not change what any task processes before what: a partition
    that lags in offsets is not left behind in event time by a batch that reads each
    partition in proportion to its backlog.

    >>> processing_prefix([np.array([1, 25, 26, 27]), np.array([2, 3, 4, 5])], 4)
    [1, 3]
    >>> processing_prefix([np.array([5, 1, 2]), np.array([3])], 2)   # 1 and 2 wait behind 5
    [1, 1]
    """
    if not timestamps or limit <= 0:
        return [0] * len(timestamps)
    entries = [np.maximum.accumulate(np.asarray(ts, dtype=np.int64)) if len(ts) else np.empty(0, np.int64)
               for ts in timestamps]
    origin = np.concatenate([np.full(len(e), i, dtype=np.int64) for i, e in enumerate(entries)])
    order = np.argsort(np.concatenate(entries), kind="stable")
    return np.bincount(origin[order[:limit]], minlength=len(timestamps)).tolist()
