"""The undo record: what a store looked like before its last committed batch.

Written in the same WriteBatch as the batch itself, so a batch that was committed
locally but never acknowledged by Spark can be rolled back exactly before it is re-run.
Encoded as Arrow IPC (one vectorised blob instead of a per-key format).
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

import pyarrow as pa

from streamlib.state.arrow import binaries

_SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary())])


class Undo(NamedTuple):
    prev_batch: Optional[int]          # last_batch before the batch
    prev_offset: Optional[int]         # changelog offset reflected before the batch
    items: list[tuple[bytes, Optional[bytes]]]   # prior value per changed key, None = absent


def _opt_int(text: bytes) -> Optional[int]:
    return int(text) if text else None


def encode_undo(prev_batch: Optional[int], prev_offset: Optional[int],
                keys: Sequence[bytes], prior: Sequence[Optional[bytes]]) -> bytes:
    meta = {"prev_batch": "" if prev_batch is None else str(prev_batch),
            "prev_offset": "" if prev_offset is None else str(prev_offset)}
    table = pa.table([pa.array(keys, pa.binary()), pa.array(prior, pa.binary())],
                     schema=_SCHEMA.with_metadata(meta))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def decode_undo(blob: bytes) -> Undo:
    table = pa.ipc.open_stream(blob).read_all()
    meta = table.schema.metadata
    return Undo(_opt_int(meta[b"prev_batch"]), _opt_int(meta[b"prev_offset"]),
                list(zip(binaries(table.column("key")), binaries(table.column("value")))))
