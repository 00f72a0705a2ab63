"""Windowed counts pre-aggregated where their topic is read, before Spark's shuffle.

A cached time-window ``count`` that emits on update, reading a user topic of the
embedded log, needs per key and window only how many records it counts, their
largest timestamp and the last one's place in the processing order (see
``TimeWindowAggregateProcessor.process_batch``). The source reader computes that for
its range (:func:`aggregate_records`), so neither the hand-over to the JVM nor the
shuffle carries every record: Spark's own windowed ``groupBy().count()`` also
aggregates partially before its shuffle.

It is exact because of the processing order (:mod:`streamlib.runtime.order`): a task
merges its input partitions by each record's running maximum timestamp within its
partition, so the largest timestamp a windowed operator has seen at a record is that
running maximum itself (the record's ``entry``), or the task's time at the batch's
start if larger; the reader knows the first (it hashes each key to its task as
Spark's ``repartition(n, key)`` does), the task the second. A record late by its
entry is late anyway; the other records of one window are all late or all on time
at the start time, which the window's end alone decides. So per key and window a
task gets one row per range: the records on time by entry (``window_records``),
their largest timestamp and the place of the last (``entry``, offset), the late
ones (``window_late``) and how many input records the rows stand for (``inputs``).

Records that would not reach the count come apart: those without a key become one
row per range (counted as dropped, as the count drops them), those that do not
deserialize or have an invalid timestamp stay raw rows, for the task's source to
pass to the deserialization handler or to stop on. Neither takes part in the
running maxima: a merge of the partitions as if they were not there, which is one of
the orders Kafka Streams itself may process several partitions in.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamlib.config import StreamsConfig
from streamlib.node_kinds import WINDOW_AGGREGATE
from streamlib.node_params import AggregateOp
from streamlib.serdes import Serde
from streamlib.spark import pickled
from streamlib.spark.arrow import SOURCE_ARROW_SCHEMA, constant_int32, constant_string, source_batches
from streamlib.spark.hashing import hash_partitions
from streamlib.topology import SubTopology, Topology
from streamlib.windows import TimeWindows

#: The columns a pre-aggregated row has beyond the source's (null in other rows).
WINDOW_COUNT_DDL = "window_start long, window_records long, window_late long, inputs long, entry long"
WINDOW_COUNT_FIELDS = [pa.field("window_start", pa.int64()), pa.field("window_records", pa.int64()),
                       pa.field("window_late", pa.int64()), pa.field("inputs", pa.int64()),
                       pa.field("entry", pa.int64())]
WINDOW_COUNT_SCHEMA = pa.schema([*SOURCE_ARROW_SCHEMA, *WINDOW_COUNT_FIELDS])
#: The data source option that asks its reader to pre-aggregate topics.
OPTION = "windowCounts"


@dataclass(frozen=True)
class WindowCountInput:
    """What the reader of ``topic`` needs to pre-aggregate it for one windowed count."""

    topic: str
    #: the count's task count: a key's task is ``hash_partition(key, tasks)``
    tasks: int
    windows: TimeWindows
    key_serde: Serde
    value_serde: Serde


def encode_inputs(inputs: dict[str, WindowCountInput]) -> str:
    """The :data:`OPTION` value for ``inputs`` (serdes and windows are picklable)."""
    return pickled.encode(inputs)


@lru_cache(maxsize=8)
def decode_inputs(text: Optional[str]) -> dict[str, WindowCountInput]:
    """The inputs :func:`encode_inputs` made ``text`` of, decoded once per process."""
    return pickled.decode(text) if text else {}


def window_count_inputs(topology: Topology, config: StreamsConfig,
                        tasks_of: dict[int, int]) -> dict[str, WindowCountInput]:
    """The user topics whose reader may pre-aggregate them: each read only by a stage
    whose one source feeds a cached, emit-on-update time-window ``count`` directly,
    with the store's key serde and serdes that can vouch for whole columns (the
    conditions of ``TimeWindowAggregateProcessor.takes_batches`` and the source's
    ``takes_table``). ``tasks_of``: each sub-topology's task count."""
    topology = topology.resolve(config)
    readers: dict[str, int] = {}
    for sub in topology.subtopologies:
        for topic in sub.input_topics:
            readers[topic] = readers.get(topic, 0) + 1
    found: dict[str, WindowCountInput] = {}
    for sub in topology.subtopologies:
        spec = _window_count_input(topology, config, sub, tasks_of[sub.id])
        if spec is not None and readers.get(spec.topic) == 1:
            found[spec.topic] = spec
    return found


def _window_count_input(topology: Topology, config: StreamsConfig, sub: SubTopology,
                        tasks: int) -> Optional[WindowCountInput]:
    reader = topology.batch_reader(sub)
    if reader is None:
        return None
    source, count = reader
    params = count.params
    if (source.params.internal or count.spec is not WINDOW_AGGREGATE or params.op is not AggregateOp.COUNT
            or params.emit_final or not config.caching):
        return None
    store = topology.stores[params.store]
    key_serde = source.params.key_serde
    value_serde = source.params.value_serde
    if not store.caching or store.key_serde != key_serde:
        return None
    if key_serde.check_batch is None or value_serde.check_batch is None:
        return None
    return WindowCountInput(source.params.topics[0], tasks, params.windows, key_serde, value_serde)


def aggregate_range(chunks: Iterator[pa.Table], topic: str, partition: int,
                    spec: WindowCountInput) -> Iterator[pa.RecordBatch]:
    """Pre-aggregated rows (:data:`WINDOW_COUNT_SCHEMA`) of one partition's range, read
    in offset order as ``chunks`` of ``RECORD_SCHEMA`` records; the running maxima go on
    from chunk to chunk."""
    running = np.full(spec.tasks, np.iinfo(np.int64).min, dtype=np.int64)
    for records in chunks:
        if records.num_rows:
            yield from aggregate_records(records.combine_chunks(), topic, partition, spec, running)


def aggregate_records(records: pa.Table, topic: str, partition: int, spec: WindowCountInput,
                      running: np.ndarray) -> Iterator[pa.RecordBatch]:
    """:func:`aggregate_range` for one chunk; ``running``: each task's running maximum
    so far, updated in place."""
    keys, values = records.column("key"), records.column("value")
    stamps = records.column("timestamp").to_numpy()
    raw = ~_decodable(keys, spec.key_serde) | ~_decodable(values, spec.value_serde) | (stamps < 0)
    has_key = pc.is_valid(keys).to_numpy(zero_copy_only=False)
    keyless = ~raw & ~has_key
    keyed = np.flatnonzero(~raw & has_key)
    if raw.any():
        for batch in source_batches(records.filter(pa.array(raw)), topic, partition):
            yield with_null_window_columns(batch)
    if keyless.any():
        yield _keyless_row(records.filter(pa.array(keyless)), topic, partition)
    if len(keyed) == 0:
        return
    encoded = pc.dictionary_encode(keys.take(pa.array(keyed))).combine_chunks()
    key_ids = encoded.indices.to_numpy()
    task = hash_partitions(encoded.dictionary, spec.tasks)[key_ids]
    ts = stamps[keyed]
    entry = np.empty_like(ts)
    by_task = np.argsort(task, kind="stable")   # each task's rows, in offset order
    for rows in np.split(by_task, np.flatnonzero(np.diff(task[by_task])) + 1):
        t = task[rows[0]]
        entry[rows] = np.maximum.accumulate(np.maximum(ts[rows], running[t]))
        running[t] = entry[rows[-1]]
    row_of, starts = spec.windows.assign(ts)
    live = starts + spec.windows.size_ms > entry[row_of] - spec.windows.grace_ms
    first = np.r_[True, row_of[1:] != row_of[:-1]] if len(row_of) else np.zeros(0, bool)
    pairs = pa.table({"key": key_ids[row_of], "start": starts, "live": live.astype(np.int64),
                      "first": first.astype(np.int64), "stamp": ts[row_of],
                      "live_stamp": pa.array(ts[row_of], mask=~live),
                      "live_row": pa.array(row_of, mask=~live), "row": row_of})
    groups = pairs.group_by(["key", "start"], use_threads=False).aggregate([
        ("live", "sum"), ("live", "count"), ("first", "sum"), ("stamp", "max"), ("live_stamp", "max"),
        ("live_row", "max"), ("row", "max")])
    on_time = groups.column("live_sum").to_numpy()
    # the group's last record on time, else (all late: no place in the order) its last
    last = pc.coalesce(groups.column("live_row_max"), groups.column("row_max")).to_numpy()
    source_rows = keyed[last]
    m = groups.num_rows
    yield pa.RecordBatch.from_arrays([
        constant_string(topic, m), constant_int32(partition, m),
        records.column("offset").take(pa.array(source_rows)).combine_chunks(),
        pc.coalesce(groups.column("live_stamp_max"), groups.column("stamp_max")).combine_chunks(),
        encoded.dictionary.take(groups.column("key").combine_chunks()),
        pa.array(np.full(m, b"", object), pa.binary()),
        records.column("headers").take(pa.array(source_rows)).combine_chunks(),
        groups.column("start").combine_chunks(), pa.array(on_time),
        pa.array(groups.column("live_count").to_numpy() - on_time),
        groups.column("first_sum").combine_chunks(),
        pa.array(entry[last], mask=on_time == 0)], schema=WINDOW_COUNT_SCHEMA)


def _decodable(column: pa.ChunkedArray, serde: Serde) -> np.ndarray:
    """Which values ``serde`` deserializes to an object that serializes back to the
    same bytes (what the batch path relies on); one by one only if the column fails."""
    if serde.check_batch(column):
        return np.ones(len(column), dtype=bool)
    out = np.ones(len(column), dtype=bool)
    for i, data in enumerate(column.to_pylist()):
        if data is None:
            continue
        try:
            out[i] = serde.serialize(serde.deserialize(data)) == data
        except Exception:
            out[i] = False
    return out


def _keyless_row(records: pa.Table, topic: str, partition: int) -> pa.RecordBatch:
    """One row for the records without a key: the count drops them all (``window_late``),
    and their largest timestamp still moves the task's stream time."""
    n = records.num_rows
    last = records.slice(n - 1)
    return pa.RecordBatch.from_arrays([
        constant_string(topic, 1), constant_int32(partition, 1), last.column("offset").combine_chunks(),
        pa.array([pc.max(records.column("timestamp")).as_py()], pa.int64()), pa.nulls(1, pa.binary()),
        pa.array([b""], pa.binary()), last.column("headers").combine_chunks(),
        pa.nulls(1, pa.int64()), pa.array([0], pa.int64()), pa.array([n], pa.int64()),
        pa.array([n], pa.int64()), pa.nulls(1, pa.int64())], schema=WINDOW_COUNT_SCHEMA)


def with_null_window_columns(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A source batch of every source column with the pre-aggregated rows' columns, all null."""
    n = batch.num_rows
    return pa.RecordBatch.from_arrays([*batch.columns, *(pa.nulls(n, f.type) for f in WINDOW_COUNT_FIELDS)],
                                      schema=WINDOW_COUNT_SCHEMA)
