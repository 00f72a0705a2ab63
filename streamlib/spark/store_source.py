"""The ``streamlib-store`` Spark data source: a store's content as a DataFrame.

One Spark input partition per store partition, read by Spark tasks (never collected
through the driver) from one frozen copy of the store's replica (see
:mod:`streamlib.query.frozen`): every task reads the same committed batch. Spark plans
a Python source's partitions once per relation, so "live" is the caller's job:
``Streams.table`` re-registers the temporary view over each newly published copy.

Options: ``copy`` (JSON :class:`~streamlib.query.frozen.FrozenCopy`), ``spec`` (base64
pickle of :class:`StoreColumns`); the schema is given, not inferred. Built by
:func:`store_dataframe`.
"""
from __future__ import annotations

import base64
import json
import pickle
import shutil
import tempfile
from dataclasses import dataclass
from itertools import islice
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np
import pyarrow as pa
from streamlib.spark import internals
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from streamlib.processors.stores.layout import SESSIONS, WINDOWS, Layout
from streamlib.query.frozen import KEEP_SECONDS, FrozenCopy
from streamlib.spark.daemon import start_worker_task
from streamlib.state.arrow import binaries
from streamlib.state.kinds import StoreKind
from streamlib.state.rocksdb import RocksDB

#: Rows per Arrow batch a task yields.
BATCH_ROWS = 65_536
SPARK_TYPES = {"string()": "string", "long()": "bigint", "integer()": "int", "double()": "double",
               "bytes()": "binary"}
_ARROW_TYPES = {"string": pa.string(), "bigint": pa.int64(), "int": pa.int32(), "double": pa.float64(),
                "binary": pa.binary()}
_FIXED = {"bigint": ">i8", "int": ">i4", "double": ">f8"}
_TIMESTAMP_BYTES = 8


def spark_type(serde: Any) -> str:
    """The Spark SQL type of a serde's values (string for structured ones, as JSON)."""
    return SPARK_TYPES.get(getattr(serde, "name", ""), "string")


@dataclass(frozen=True)
class StoreColumns:
    """How a store's bytes become columns: serdes and the store kind."""

    kind: StoreKind
    key_serde: Any
    value_serde: Any
    window_size_ms: int = 0

    @property
    def ddl(self) -> str:
        return ROW_DECODERS[self.kind].ddl.format(key=spark_type(self.key_serde),
                                                  value=spark_type(self.value_serde))

    def encode(self) -> str:
        return base64.b64encode(internals.cloudpickle().dumps(self)).decode()

    @staticmethod
    def decode(text: str) -> "StoreColumns":
        return pickle.loads(base64.b64decode(text))


def _column(raw: list[bytes], serde: Any, skip: int) -> pa.Array:
    """Serialized values (after ``skip`` prefix bytes) as an Arrow column of the
    serde's Spark type; plain fixed-width and string serdes without a Python loop."""
    kind = spark_type(serde)
    name = getattr(serde, "name", "")
    width = np.dtype(_FIXED[kind]).itemsize if kind in _FIXED else 0
    if name in SPARK_TYPES and width and all(len(r) == skip + width for r in raw):
        blob = np.frombuffer(b"".join(raw), dtype=np.uint8).reshape(len(raw), skip + width)
        return pa.array(blob[:, skip:].copy().view(_FIXED[kind]).ravel().astype(_FIXED[kind][1:]))
    if name in ("string()", "bytes()"):
        column = pa.array([r[skip:] for r in raw] if skip else raw, pa.binary())
        return column.cast(pa.string()) if kind == "string" else column
    values = [serde.deserialize(r[skip:]) for r in raw]
    if kind == "string":
        values = [v if v is None or isinstance(v, str) else json.dumps(v, default=str) for v in values]
    return pa.array(values, _ARROW_TYPES[kind])


def kv_batch(columns: StoreColumns, keys: list[bytes], values: list[bytes]) -> pa.RecordBatch:
    """Entries of a timestamped key-value store as a ``key, value`` batch."""
    return pa.RecordBatch.from_arrays([_column(keys, columns.key_serde, 0),
                                       _column(values, columns.value_serde, _TIMESTAMP_BYTES)],
                                      names=["key", "value"])


def _windowed_batch(columns: StoreColumns, layout: Layout, keys: list[bytes], values: list[bytes],
                    bounds: Callable[[tuple], tuple[int, int]]) -> pa.RecordBatch:
    """Windows (sessions) of a window (session) store as ``key, window_start, window_end,
    value``; the store's time-index entries are left out. ``bounds`` turns a data key's
    slot into the window's (start, end)."""
    rows = [(layout.parse_data(k), v) for k, v in zip(keys, values) if k[:1] == layout.tag]
    kbs = [kb for (kb, _), _ in rows]
    starts, ends = zip(*(bounds(slot) for (_, slot), _ in rows)) if rows else ((), ())
    return pa.RecordBatch.from_arrays(
        [_column(kbs, columns.key_serde, 0), pa.array(starts, pa.int64()), pa.array(ends, pa.int64()),
         _column([v for _, v in rows], columns.value_serde, _TIMESTAMP_BYTES)],
        names=["key", "window_start", "window_end", "value"])


def window_batch(columns: StoreColumns, keys: list[bytes], values: list[bytes]) -> pa.RecordBatch:
    """A window store's windows; a window ends ``window_size_ms`` after its start."""
    return _windowed_batch(columns, WINDOWS, keys, values,
                           lambda slot: (slot[0], slot[0] + columns.window_size_ms))


def session_batch(columns: StoreColumns, keys: list[bytes], values: list[bytes]) -> pa.RecordBatch:
    """A session store's sessions (keyed ``(end, start)``)."""
    return _windowed_batch(columns, SESSIONS, keys, values, lambda slot: (slot[1], slot[0]))


class RowDecoder(NamedTuple):
    """How ``Streams.table()`` shows one store kind: its columns (a DDL template over
    ``{key}`` and ``{value}``, the serdes' Spark types) and the function that turns
    rows of (key bytes, value bytes) into an Arrow batch of them."""

    ddl: str
    decode: Callable[[StoreColumns, list[bytes], list[bytes]], pa.RecordBatch]


_WINDOWED_DDL = "key {key}, window_start bigint, window_end bigint, value {value}"
#: the table row decoder of each queryable store kind
ROW_DECODERS: dict[StoreKind, RowDecoder] = {
    StoreKind.KV: RowDecoder("key {key}, value {value}", kv_batch),
    StoreKind.WINDOW: RowDecoder(_WINDOWED_DDL, window_batch),
    StoreKind.SESSION: RowDecoder(_WINDOWED_DDL, session_batch),
}


@dataclass(frozen=True)
class StorePartition(InputPartition):
    """One store partition's frozen copy (or, for a store without changelog, a task copy
    read as a RocksDB secondary)."""

    path: str
    secondary: bool


def read_partition(columns: StoreColumns, part: StorePartition) -> Iterator[pa.RecordBatch]:
    """The copy's entries in key order, ``BATCH_ROWS`` at a time."""
    start_worker_task()
    scratch = tempfile.mkdtemp(prefix="streamlib-table-") if part.secondary else None
    try:
        db = (RocksDB.open_secondary(part.path, scratch) if part.secondary
              else RocksDB.open_read_only(part.path))
    except FileNotFoundError:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        if part.secondary:   # a task that never committed: no entries
            return
        raise FileNotFoundError(
            f"the store copy {part.path} is gone: a DataFrame from Streams.table() reads the batch "
            f"it was made at, kept {KEEP_SECONDS:g}s after a newer one; query the temporary view "
            "or call Streams.table() again for the newest") from None
    decode = ROW_DECODERS[columns.kind].decode
    try:
        entries = db.scan((None, None))
        while True:
            rows = list(islice(entries, BATCH_ROWS))
            if not rows:
                return
            keys, values = zip(*rows)
            yield decode(columns, list(keys), list(values))
    finally:
        db.close()
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


class StoreReader(DataSourceReader):
    def __init__(self, options: dict):
        self.copy = FrozenCopy.from_json(options["copy"])
        self.columns = StoreColumns.decode(options["spec"])

    def partitions(self) -> list[StorePartition]:
        return [StorePartition(p, self.copy.secondary) for p in self.copy.partitions]

    def read(self, partition: StorePartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.columns, partition)


class StoreDataSource(DataSource):
    """``format("streamlib-store")``: read a store's newest frozen copy."""

    @classmethod
    def name(cls) -> str:
        return "streamlib-store"

    def schema(self) -> str:
        return StoreColumns.decode(self.options["spec"]).ddl

    def reader(self, schema: StructType) -> StoreReader:
        return StoreReader(dict(self.options))


def store_dataframe(spark: Any, copy: FrozenCopy, columns: StoreColumns) -> Any:
    """A DataFrame over one frozen copy of a store (see the module docstring)."""
    if columns.kind not in ROW_DECODERS:
        raise ValueError(f"Streams.table() reads {[k.value for k in ROW_DECODERS]} stores, "
                         f"not {columns.kind.value!r}")
    return (spark.read.format("streamlib-store").schema(columns.ddl)
            .option("copy", copy.to_json()).option("spec", columns.encode()).load())
