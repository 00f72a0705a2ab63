"""Stateless steps over whole columns, and the rows a task emits as Arrow tables.

A straight chain of stateless steps ending in a sink needs no ``Record`` objects:
each step maps Python lists of keys and values with the user's function, and the
sink encodes the lists at once (:meth:`Serde.serialize_column`); timestamps and
headers follow each output row's input row by index. For a straight chain with one
sink this emits exactly the rows, in exactly the order, that record-at-a-time
processing does. The runtime fuses whole stateless sub-topologies this way
(``runtime.fused``); a caching table's flush sends its updates down such a chain.
Callers fall back to record-at-a-time processing on any exception, which then
reports it precisely (the chain's functions are pure by contract; ``peek`` and
``foreach``, whose point is a side effect, are never fused).
"""
from __future__ import annotations

from itertools import chain, compress
from typing import Callable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..topics.base import HEADER_TYPE
from .base import Processor
from .io import SinkProcessor
from .record import Change
from .stateless import (FilterProcessor, FlatMapProcessor, FlatMapValuesProcessor, MapProcessor,
                        MapValuesProcessor, PassThroughProcessor, SelectKeyProcessor, ToStreamProcessor)

#: Rows a task emits: where to (``partition`` null unless a partitioner chose one), and the record.
OUTPUT_SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("timestamp", pa.int64()),
                           ("key", pa.binary()), ("value", pa.binary()), ("headers", HEADER_TYPE)])

# A step maps (keys, values, origin) to the same; origin[i] is the input row of row i
# (None: the identity, before any step changed the number of rows).
_Lists = tuple[list, list, Optional[np.ndarray]]


def _filter(proc: FilterProcessor, keys: list, values: list, origin: Optional[np.ndarray]) -> _Lists:
    predicate, keep_when = proc.predicate, proc.keep_when
    mask = [bool(predicate(k, v)) == keep_when for k, v in zip(keys, values)]
    kept = np.flatnonzero(np.array(mask, dtype=bool))
    return (list(compress(keys, mask)), list(compress(values, mask)),
            kept if origin is None else origin[kept])


def _map(proc: MapProcessor, keys: list, values: list, origin: Optional[np.ndarray]) -> _Lists:
    pairs = [(k, v) for k, v in map(proc.mapper, keys, values)]  # unpacks like ``k, v = ...``
    return [p[0] for p in pairs], [p[1] for p in pairs], origin


def _map_values(proc: MapValuesProcessor, keys: list, values: list,
                origin: Optional[np.ndarray]) -> _Lists:
    return keys, list(map(proc.mapper, values)), origin


def _select_key(proc: SelectKeyProcessor, keys: list, values: list,
                origin: Optional[np.ndarray]) -> _Lists:
    return list(map(proc.mapper, keys, values)), values, origin


def _expand(parts: list[list], origin: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Row of each element of the flattened ``parts``: in this step and in the input."""
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    rows = np.repeat(np.arange(len(parts)), lengths)
    return rows, rows if origin is None else origin[rows]


def _flat_map_values(proc: FlatMapValuesProcessor, keys: list, values: list,
                     origin: Optional[np.ndarray]) -> _Lists:
    parts = [list(proc.mapper(v)) for v in values]
    rows, origin = _expand(parts, origin)
    return _repeat(keys, rows), list(chain.from_iterable(parts)), origin


def _flat_map(proc: FlatMapProcessor, keys: list, values: list, origin: Optional[np.ndarray]) -> _Lists:
    parts = [[(k, v) for k, v in proc.mapper(key, value)] for key, value in zip(keys, values)]
    rows, origin = _expand(parts, origin)
    pairs = list(chain.from_iterable(parts))
    return [p[0] for p in pairs], [p[1] for p in pairs], origin


def _to_stream(proc: ToStreamProcessor, keys: list, values: list,
               origin: Optional[np.ndarray]) -> _Lists:
    values = [v.new if isinstance(v, Change) else v for v in values]
    if proc.mapper is None:
        return keys, values, origin
    return list(map(proc.mapper, keys, values)), values, origin


def _pass(proc: Processor, keys: list, values: list, origin: Optional[np.ndarray]) -> _Lists:
    return keys, values, origin


def _repeat(items: list, rows: np.ndarray) -> list:
    if all(item is None for item in items):  # the usual unkeyed input: nothing to gather
        return [None] * len(rows)
    return list(map(items.__getitem__, rows.tolist()))


#: Processor classes (exactly these, not subclasses) a chain may fuse, and their column step.
STEPS: dict[type, Callable[..., _Lists]] = {
    FilterProcessor: _filter, MapProcessor: _map, MapValuesProcessor: _map_values,
    SelectKeyProcessor: _select_key, FlatMapValuesProcessor: _flat_map_values,
    FlatMapProcessor: _flat_map, PassThroughProcessor: _pass, ToStreamProcessor: _to_stream,
}


def chain_below(proc: Processor) -> Optional[tuple[list[Processor], SinkProcessor]]:
    """The fusable steps from ``proc``'s one child down to a sink (no partitioner, no
    change pairs, nothing after it), if ``proc``'s descendants are exactly that."""
    steps: list[Processor] = []
    while True:
        if len(proc.children) != 1:
            return None
        proc = proc.children[0]
        if type(proc) is SinkProcessor:
            break
        if type(proc) not in STEPS:
            return None
        steps.append(proc)
    if proc.children or proc.partitioner is not None or proc.changes:
        return None
    return steps, proc


def run_chain(steps: list[Processor], sink: SinkProcessor, keys: list, values: list,
              timestamps: pa.Array, headers: pa.Array) -> pa.Table:
    """:data:`OUTPUT_SCHEMA` rows of records (as columns) sent down ``steps`` into ``sink``."""
    origin: Optional[np.ndarray] = None
    for step in steps:
        keys, values, origin = STEPS[type(step)](step, keys, values, origin)
    key_bytes = sink.key_serde.serialize_column(keys)
    value_bytes = sink.value_serde.serialize_column(values)
    n = len(values)
    if not pc.sum(pc.list_value_length(headers)).as_py():  # no headers: none to gather
        headers = empty_headers(n)
    elif origin is not None:
        headers = headers.take(pa.array(origin, pa.int64()))
    if origin is not None:
        timestamps = timestamps.take(pa.array(origin, pa.int64()))
    return pa.Table.from_arrays(
        [pa.repeat(pa.scalar(sink.topic, pa.string()), n), pa.nulls(n, pa.int32()),
         timestamps, key_bytes, value_bytes, headers.cast(HEADER_TYPE)],
        schema=OUTPUT_SCHEMA)


def empty_headers(n: int) -> pa.Array:
    """``n`` empty header lists, built without Python lists."""
    return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, dtype=np.int32)),
                                    pa.array([], HEADER_TYPE.value_type))




def output_rows(output: list[tuple]) -> pa.Table:
    """Emitted ``(topic, partition, timestamp, key, value, headers)`` tuples as
    :data:`OUTPUT_SCHEMA` rows."""
    if not output:
        return OUTPUT_SCHEMA.empty_table()
    topics, partitions, timestamps, keys, values, headers = (list(c) for c in zip(*output))
    return pa.Table.from_arrays(
        [pa.array(topics, pa.string()), pa.array(partitions, pa.int32()), pa.array(timestamps, pa.int64()),
         pa.array(keys, pa.binary()), pa.array(values, pa.binary()), headers_array(headers)],
        schema=OUTPUT_SCHEMA)


def headers_array(headers: list[tuple]) -> pa.Array:
    """Headers (tuples of ``(key, value)``) of many records as one Arrow array."""
    if not any(headers):  # the common case: no headers at all
        return empty_headers(len(headers))
    return pa.array([[{"key": k, "value": v} for k, v in h] for h in headers], HEADER_TYPE)


def row_headers(headers: pa.ChunkedArray) -> Optional[list[tuple]]:
    """Each row's headers as a :class:`Record` has them (tuples of ``(key, value)``), the
    inverse of :func:`headers_array`; None when no row has any (the common case)."""
    if not pc.sum(pc.list_value_length(headers)).as_py():
        return None
    return [tuple((h["key"], h["value"]) for h in hs) if hs else () for hs in headers.to_pylist()]


def output_tuples(rows: pa.Table) -> list[tuple]:
    """:data:`OUTPUT_SCHEMA` rows back as emitted tuples (headers as tuples of pairs)."""
    columns = [rows.column(name).to_pylist() for name in OUTPUT_SCHEMA.names]
    return [(t, p, ts, k, v, tuple((h["key"], h["value"]) for h in hs))
            for t, p, ts, k, v, hs in zip(*columns)]
