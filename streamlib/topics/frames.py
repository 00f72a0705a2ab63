"""On-disk format of the local log: segments made of framed Arrow IPC batches.

Why Arrow IPC: a frame's payload is an Arrow IPC stream of one record batch
(:data:`~streamlib.topics.base.RECORD_SCHEMA`), so a read memory-maps the segment
and hands Arrow buffers straight to Spark's Arrow data source path and to our
Arrow batch processing: no decoding, no copy, no per-record Python.

Layout::

    segment  = SEGMENT_HEADER(magic, segment id) frame*
    frame    = FRAME_HEADER(magic, body_len, crc, first, last, count, producers_len)
               producers-json  arrow-ipc-stream
    index    = SEGMENT_HEADER(magic, segment id) INDEX_ENTRY*

A frame covers the offsets ``[first, last]``; after compaction it may hold fewer
rows than that range (``count`` rows). ``crc`` is a CRC-32 over the header fields
after it and the body, so a torn or garbage tail is recognised. The optional
producers JSON maps producer ids to their last sequence, which makes idempotent
appends recoverable from the data alone. The index is only an accelerator: each
entry (``first``, ``last``, position, size) carries its own CRC and is rebuilt by
scanning frames when missing, torn or belonging to another segment id.
"""
from __future__ import annotations

import json
import os
import struct
import zlib
from typing import NamedTuple, Optional

import pyarrow as pa

SEGMENT_MAGIC = b"SLSEG001"
SEGMENT_HEADER = struct.Struct("<8s8s")
FRAME_MAGIC = b"SLF1"
FRAME_HEADER = struct.Struct("<4sIIqqiI")
INDEX_ENTRY = struct.Struct("<qqqII")
_CRC_FROM = 12  # header bytes after magic, body_len and crc are covered by the crc


class FrameInfo(NamedTuple):
    """Where a frame lives and which offsets it covers."""

    first: int
    last: int
    position: int
    size: int


def new_segment_header() -> bytes:
    return SEGMENT_HEADER.pack(SEGMENT_MAGIC, os.urandom(8))


def encode_frame(batch: Optional[pa.RecordBatch], first: int, last: int,
                 producers: Optional[dict[str, int]] = None) -> bytes:
    """One frame holding ``batch`` (``None`` for an empty frame) for offsets ``[first, last]``."""
    sink = pa.BufferOutputStream()
    if batch is not None:
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
    payload = sink.getvalue()
    pjson = json.dumps(producers, separators=(",", ":")).encode() if producers else b""
    count = batch.num_rows if batch is not None else 0
    body_len = len(pjson) + payload.size
    fields = FRAME_HEADER.pack(FRAME_MAGIC, body_len, 0, first, last, count, len(pjson))
    crc = zlib.crc32(payload, zlib.crc32(pjson, zlib.crc32(fields[_CRC_FROM:])))
    header = FRAME_HEADER.pack(FRAME_MAGIC, body_len, crc, first, last, count, len(pjson))
    return b"".join((header, pjson, payload.to_pybytes()))


def parse_frame(data: memoryview | bytes, position: int) -> Optional[FrameInfo]:
    """The frame starting at ``position`` if it is complete and its CRC matches."""
    end = position + FRAME_HEADER.size
    if end > len(data):
        return None
    magic, body_len, crc, first, last, _count, _plen = FRAME_HEADER.unpack_from(data, position)
    if magic != FRAME_MAGIC or end + body_len > len(data):
        return None
    actual = zlib.crc32(data[end:end + body_len],
                        zlib.crc32(data[position + _CRC_FROM:end]))
    if actual != crc:
        return None
    return FrameInfo(first, last, position, FRAME_HEADER.size + body_len)


def frame_producers(header_and_more: bytes) -> dict[str, int]:
    """The producers JSON of a frame, given at least its header and that JSON."""
    plen = FRAME_HEADER.unpack_from(header_and_more)[6]
    if not plen:
        return {}
    start = FRAME_HEADER.size
    return json.loads(header_and_more[start:start + plen])


def frame_table(segment: pa.Buffer, info: FrameInfo) -> Optional[pa.Table]:
    """The records of a frame as a table sharing ``segment``'s memory (``None`` if empty)."""
    _, body_len, _, _, _, count, plen = FRAME_HEADER.unpack_from(
        segment.slice(info.position, FRAME_HEADER.size))
    if count == 0:
        return None
    start = info.position + FRAME_HEADER.size + plen
    return pa.ipc.open_stream(segment.slice(start, body_len - plen)).read_all()


def encode_index_entry(info: FrameInfo) -> bytes:
    packed = struct.pack("<qqqI", *info)
    return packed + struct.pack("<I", zlib.crc32(packed))


def parse_index(data: bytes, segment_header: bytes) -> list[FrameInfo]:
    """Valid, contiguous index entries of a segment; stops at the first bad one."""
    if data[:SEGMENT_HEADER.size] != segment_header:
        return []
    entries: list[FrameInfo] = []
    expected = SEGMENT_HEADER.size
    for pos in range(SEGMENT_HEADER.size, len(data) - INDEX_ENTRY.size + 1, INDEX_ENTRY.size):
        first, last, position, size, crc = INDEX_ENTRY.unpack_from(data, pos)
        if crc != zlib.crc32(data[pos:pos + INDEX_ENTRY.size - 4]) or position != expected:
            break
        entries.append(FrameInfo(first, last, position, size))
        expected = position + size
    return entries
