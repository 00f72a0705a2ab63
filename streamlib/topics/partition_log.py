"""One partition of the local log: segments, offset index, locking, recovery, compaction.

Concurrency model (several processes, e.g. Spark Python workers):

* Writers (append, compact, recovery) hold ``fcntl.flock`` on the partition's
  ``lock`` file, so frames are written one at a time at the tail.
* Readers take no lock. They see a frame only once it is complete with a valid
  CRC (index entries are written after the frame, and frames past the index are
  checked), so a half-written frame is never read.
* Compaction writes a new first segment beside the old one and renames it in;
  readers holding the old file keep a consistent view and later segments it
  made redundant are recognised (their base is below the end of the compacted
  segment) and ignored until the writer deletes them.

Crash safety: a torn tail (half frame, garbage) is cut off by the next writer;
index entries are rebuilt from the frames. Cutting the last segment's tail (or
finding that it lost frames its index still lists) starts a new log epoch before
the offsets are handed out again (:mod:`~streamlib.topics.epochs`). Idempotence state (last sequence per
producer) is recovered from the frames themselves; ``producers.json`` is only a
cache of it.
"""
from __future__ import annotations

import bisect
import fcntl
import json
import logging
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa

from .base import APPEND_SCHEMA, RECORD_SCHEMA, TopicsError
from .compaction import Compaction, compacted_frames, latest_per_key
from .epochs import EPOCHS_FILE, History, bumped, read_history, write_history
from .frames import (FRAME_HEADER, INDEX_ENTRY, SEGMENT_HEADER, SEGMENT_MAGIC, FrameInfo, encode_frame,
                     encode_index_entry, frame_producers, frame_table, new_segment_header,
                     parse_frame, parse_index)
from .fsyncs import fsync_now_or_later, fsync_path

DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
log = logging.getLogger("streamlib.topics")
_SNAPSHOT = "producers.json"
_CLEANER = "cleaner.json"


@dataclass
class _Segment:
    base: int
    path: str
    inode: int
    header: bytes
    size: int = 0
    frames: list[FrameInfo] = field(default_factory=list)
    indexed: int = 0  # how many of ``frames`` are in the index file
    mapped: Optional[pa.Buffer] = None
    #: its index listed frames past the end of its data: the file lost frames
    lost_frames: bool = False

    @property
    def data_end(self) -> int:
        return self.frames[-1].position + self.frames[-1].size if self.frames else SEGMENT_HEADER.size

    def buffer(self, needed: int) -> pa.Buffer:
        """The segment memory-mapped, remapped when it grew past what is mapped."""
        if self.mapped is None or self.mapped.size < needed:
            with pa.memory_map(self.path) as mm:
                self.mapped = mm.read_buffer()
        return self.mapped


def _segment_name(base: int) -> str:
    return f"{base:020d}.log"


def _index_path(segment_path: str) -> str:
    return segment_path[:-4] + ".idx"


class PartitionDeleted(TopicsError):
    """The partition's directory is gone: its topic was deleted (maybe by another process)."""


class PartitionLog:
    """The append-only log of one topic partition in directory ``path``."""

    def __init__(self, path: str, fsync: bool = True, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 compaction: Optional[Compaction] = None):
        self.path = path
        self.fsync = fsync
        self.segment_bytes = segment_bytes
        #: compact by itself past the dirty ratio (``None``: only when asked)
        self.compaction = compaction
        self._segments: list[_Segment] = []
        self._lasts: list[int] = []      # last offset of every frame, for bisect
        self._where: list[tuple[_Segment, FrameInfo]] = []
        self._producers: Optional[dict[str, int]] = None
        self._producers_through = 0      # frames of ``_where`` folded into ``_producers``
        self._mutex = threading.RLock()
        self._lock_fd: Optional[int] = None
        self._epochs_seen: Optional[tuple] = None  # the epochs file when the segments were read
        self._history: Optional[tuple[Optional[tuple], History]] = None  # (its file's identity, epochs)

    # ---- views -------------------------------------------------------------
    def end_offset(self) -> int:
        with self._mutex:
            self._refresh()
            return self._end()

    def start_offset(self) -> int:
        with self._mutex:
            self._refresh()
            return self._where[0][1].first if self._where else self._end()

    def epochs(self) -> History:
        """The partition's epoch history (read after the segments: a reader that saw
        records appended under a new epoch sees that epoch). Kept while its file is the
        same (it is only ever replaced whole, :func:`~streamlib.topics.epochs.write_history`):
        a source asks for it several times per micro-batch."""
        seen = _file_identity(os.path.join(self.path, EPOCHS_FILE))
        known = self._history
        if known is None or known[0] != seen:
            # stat before the read: a replacement in between is read again next time
            known = self._history = (seen, read_history(self.path))
        return known[1]

    def read_arrow(self, start: int, end: int) -> pa.Table:
        """Rows with ``start <= offset < end``, zero-copy from the mapped segments."""
        with self._mutex:
            self._refresh()
            pieces = []
            i = bisect.bisect_left(self._lasts, start)
            while i < len(self._where) and self._where[i][1].first < end:
                segment, info = self._where[i]
                table = frame_table(segment.buffer(info.position + info.size), info)
                if table is not None:
                    pieces.append(table)
                i += 1
        if not pieces:
            return pa.Table.from_batches([], RECORD_SCHEMA)  # empty_table() imports pandas
        pieces[0] = _clip(pieces[0], start, end)
        pieces[-1] = _clip(pieces[-1], start, end)
        return pa.concat_tables(pieces)

    # ---- writes ------------------------------------------------------------
    def append(self, records: pa.Table, producer_id: Optional[str] = None,
               sequence: Optional[int] = None) -> bool:
        """Append ``records`` (APPEND_SCHEMA) as one frame; see TopicBackend.append."""
        if (producer_id is None) != (sequence is None):
            raise TopicsError("append needs both producer_id and sequence, or neither")
        with self._locked():
            if producer_id is not None:
                if self._producer_state().get(producer_id, -1) >= sequence:
                    return False
            first = self._end()
            n = records.num_rows
            if n == 0 and producer_id is None:
                return True
            batch = _with_offsets(records, first) if n else None
            producers = {producer_id: sequence} if producer_id is not None else None
            # An empty idempotent append still records its sequence, covering no offsets.
            self._write_frames(self._active_segment(), [(batch, first, first + n - 1, producers)])
            if producers:
                self._producers[producer_id] = sequence
                self._producers_through = len(self._where)
            if self.compaction is not None and self._dirty_enough(self.compaction):
                self._compact(int(time.time() * 1000))
            return True

    def _dirty_enough(self, policy: Compaction) -> bool:
        total = sum(segment.size for segment in self._segments)
        dirty = total - self._cleaner_state().get("clean_bytes", 0)
        return dirty >= policy.min_dirty_bytes and dirty >= policy.min_dirty_ratio * total

    def compact(self, now_ms: Optional[int] = None) -> None:
        """Keep the latest record per key; offsets are preserved. A key whose latest
        record is a tombstone keeps the tombstone for ``delete.retention.ms`` after the
        compaction that first saw it (``now_ms``: the wall clock, for tests)."""
        with self._locked():
            self._compact(int(time.time() * 1000) if now_ms is None else now_ms)

    def _compact(self, now_ms: int) -> None:
        """:meth:`compact`, with the lock held."""
        retention = (self.compaction or Compaction()).delete_retention_ms
        if not self._where:
            return
        start, end = self._where[0][1].first, self._end()
        producers = dict(self._producer_state())
        cleaner = self._cleaner_state()
        # Compactions so far: (end offset, wall time). Tombstones below the end of
        # one at least ``retention`` old were seen that long ago: they may go.
        history = [tuple(h) for h in cleaner.get("history", [])] + [(end, now_ms)]
        expired = [h for h in history if h[1] <= now_ms - retention]
        droppable = max((h[0] for h in expired), default=start)
        history = [h for h in history if h[1] > now_ms - retention] + expired[-1:]
        table = self.read_arrow(start, end)
        keep = latest_per_key(table, droppable)
        first_segment = self._segments[0]
        tmp = os.path.join(self.path, f"{first_segment.base:020d}.compacting.log")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            header = new_segment_header()
            os.write(fd, header)
            segment = _Segment(first_segment.base, tmp, os.fstat(fd).st_ino, header,
                               size=len(header))
            self._write_to(fd, segment, compacted_frames(keep, start, end, producers))
        finally:
            os.close(fd)
        # The new segment replaces the first one atomically; a crash before the old
        # later segments are gone leaves them redundant (base < end), never visible.
        os.replace(tmp, first_segment.path)
        os.replace(_index_path(tmp), _index_path(first_segment.path))
        for stale in self._segments[1:]:
            _unlink_segment(stale.path)
        self._sync_dir()
        self._segments, self._where, self._lasts = [], [], []
        self._refresh()
        self._producers, self._producers_through = producers, len(self._where)
        self._write_snapshot()
        self._write_cleaner({"clean_bytes": sum(segment.size for segment in self._segments),
                             "history": sorted(history)})

    def _cleaner_state(self) -> dict:
        """What the last compaction left: its size and the compaction history."""
        try:
            with open(os.path.join(self.path, _CLEANER)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def _write_cleaner(self, state: dict) -> None:
        tmp = os.path.join(self.path, _CLEANER + ".tmp")
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, os.path.join(self.path, _CLEANER))

    def close(self) -> None:
        with self._mutex:
            if self._lock_fd is not None:
                try:
                    with self._locked():
                        if self._producers:
                            self._write_snapshot()
                except PartitionDeleted:
                    pass  # a deleted partition needs no snapshot
                finally:
                    os.close(self._lock_fd)
                    self._lock_fd = None
            self._segments, self._where, self._lasts = [], [], []

    # ---- internals ---------------------------------------------------------
    def _end(self) -> int:
        if self._where:
            return self._where[-1][1].last + 1
        return self._segments[-1].base if self._segments else 0

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._mutex:
            if self._lock_fd is None:
                self._lock_fd = os.open(os.path.join(self.path, "lock"), os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                self._refresh(repair=True)
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _refresh(self, repair: bool = False) -> None:
        """Catch up with the segments on disk; with ``repair`` (lock held) cut torn tails."""
        try:
            names = sorted(n for n in os.listdir(self.path) if n.endswith(".log"))
        except FileNotFoundError:
            raise PartitionDeleted(f"partition directory {self.path} disappeared (topic deleted?)") from None
        self._forget_frames_of_an_older_epoch()
        known = {s.base: s for s in self._segments}
        last_name = max((n for n in names if n[:-4].isdigit()), default=None)
        segments: list[_Segment] = []
        end = 0
        changed = replaced = False
        for name in names:
            if not name[:-4].isdigit():
                continue
            base = int(name[:-4])
            path = os.path.join(self.path, name)
            if segments and base < end:  # made redundant by a compaction in progress
                if repair:
                    _unlink_segment(path)
                continue
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            segment = known.get(base)
            if segment is None or segment.inode != st.st_ino:
                replaced |= segment is not None
                segment = _load_segment(path, base, st.st_ino)
                changed = True
                if segment is None:
                    if repair and st.st_size < SEGMENT_HEADER.size:
                        # A writer died between creating this file and writing its header
                        # (the lock is ours: nobody is creating it now); nothing was appended.
                        log.warning("%s: removing a segment file left without its header by a writer "
                                    "that died creating it", path)
                        _unlink_segment(path)
                    continue
            if st.st_size != segment.size:
                _scan_frames(segment, st.st_size)
                changed = True
            if repair:
                changed |= self._repair(segment, last=name == last_name)
            segments.append(segment)
            end = segment.frames[-1].last + 1 if segment.frames else base
        if changed or len(segments) != len(self._segments):
            self._segments = segments
            self._where = [(s, f) for s in segments for f in s.frames]
            self._lasts = [f.last for _, f in self._where]
            if replaced or {s.base for s in segments} < set(known):
                self._producers, self._producers_through = None, 0  # compacted elsewhere

    def _forget_frames_of_an_older_epoch(self) -> None:
        """Drop the frames known so far if the log started a new epoch since: its tail
        was cut and may have been written again in place, where known frames (read
        before the damage) would name bytes that are now other records."""
        seen = _file_identity(os.path.join(self.path, EPOCHS_FILE))
        if seen != self._epochs_seen:
            if self._segments:
                self._segments, self._where, self._lasts = [], [], []
                self._producers, self._producers_through = None, 0
            self._epochs_seen = seen

    def _repair(self, segment: _Segment, last: bool = False) -> bool:
        """Truncate bytes after the last valid frame and index the unindexed frames.

        Cutting the ``last`` segment (or finding it lost frames) first starts a new
        epoch at its new end: the next appends reuse the cut offsets, and readers
        that read the cut records must find out (the bump is durable before the cut,
        so a crash between them only leaves an epoch that covers nothing)."""
        changed = False
        if last and (segment.lost_frames or segment.size > segment.data_end):
            end = segment.frames[-1].last + 1 if segment.frames else segment.base
            self._bump_epoch(end)
            segment.lost_frames = False
            self._producers, self._producers_through = None, 0  # the cut frames' sequences went too
        if segment.size > segment.data_end:
            # A writer died mid-append (or the file was damaged): what follows the last
            # complete frame was never acknowledged. Say so: a reader that had been told
            # of later offsets (a checkpoint) must find out why they are gone.
            log.warning("%s: cutting a torn tail of %d bytes after offset %d",
                        segment.path, segment.size - segment.data_end,
                        segment.frames[-1].last if segment.frames else segment.base - 1)
            with open(segment.path, "r+b") as f:
                f.truncate(segment.data_end)
            segment.size = segment.data_end
            segment.mapped = None
            changed = True
        if segment.indexed < len(segment.frames):
            entries = b"".join(encode_index_entry(f) for f in segment.frames[segment.indexed:])
            fd = os.open(_index_path(segment.path), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if segment.indexed == 0:
                    entries = segment.header + entries
                    pos = 0
                else:
                    pos = SEGMENT_HEADER.size + segment.indexed * INDEX_ENTRY.size
                os.pwrite(fd, entries, pos)
                os.ftruncate(fd, pos + len(entries))
            finally:
                os.close(fd)
            segment.indexed = len(segment.frames)
        return changed

    def _bump_epoch(self, start: int) -> None:
        history = bumped(read_history(self.path), start)
        log.warning("%s: offsets from %d on will be handed out again: new log epoch %d",
                    self.path, start, history[-1][0])
        write_history(self.path, history, self.fsync)

    def _active_segment(self) -> _Segment:
        """The segment to append to, rolling a new one when the last is full."""
        if self._segments and self._segments[-1].size < self.segment_bytes:
            return self._segments[-1]
        base = self._end()
        path = os.path.join(self.path, _segment_name(base))
        header = new_segment_header()
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            # not a torn creation (the repair pass removed those): never overwrite it
            raise TopicsError(f"{path} is not a segment of the log (its header is damaged) but is where "
                              "the next one must go; move it away to append again") from None
        try:
            os.write(fd, header)
            if self.fsync:
                os.fsync(fd)
            segment = _Segment(base, path, os.fstat(fd).st_ino, header, size=len(header))
        finally:
            os.close(fd)
        self._sync_dir()
        self._segments.append(segment)
        return segment

    def _write_frames(self, segment: _Segment, frames: list[tuple]) -> None:
        fd = os.open(segment.path, os.O_RDWR)
        try:
            self._write_to(fd, segment, frames)
        finally:
            os.close(fd)
        for info in segment.frames[len(segment.frames) - len(frames):]:
            self._where.append((segment, info))
            self._lasts.append(info.last)

    def _write_to(self, fd: int, segment: _Segment, frames: list[tuple]) -> None:
        """Write frames at the segment's end, fsync, then add their index entries.

        The index needs no fsync: a lost or torn entry is rebuilt from the frames."""
        pos = segment.size
        infos = []
        for batch, first, last, producers in frames:
            data = encode_frame(batch, first, last, producers)
            _pwrite_all(fd, data, pos)
            infos.append(FrameInfo(first, last, pos, len(data)))
            pos += len(data)
        if self.fsync:
            fsync_now_or_later(fd, segment.path)
        segment.size = pos
        segment.frames.extend(infos)
        self._repair(segment)

    def _producer_state(self) -> dict[str, int]:
        """Last sequence per producer id, folded from frame headers (lock held)."""
        if self._producers is None:
            self._producers, self._producers_through = self._read_snapshot()
        fds: dict[str, int] = {}
        try:
            for segment, info in self._where[self._producers_through:]:
                fd = fds.get(segment.path)
                if fd is None:
                    fd = fds[segment.path] = os.open(segment.path, os.O_RDONLY)
                head = os.pread(fd, FRAME_HEADER.size, info.position)
                plen = FRAME_HEADER.unpack_from(head)[6]
                if plen:
                    head = os.pread(fd, FRAME_HEADER.size + plen, info.position)
                    for pid, seq in frame_producers(head).items():
                        self._producers[pid] = max(seq, self._producers.get(pid, -1))
        finally:
            for fd in fds.values():
                os.close(fd)
        self._producers_through = len(self._where)
        return self._producers

    def _read_snapshot(self) -> tuple[dict[str, int], int]:
        """The cached producer state and how many frames it covers, if still valid."""
        try:
            with open(os.path.join(self.path, _SNAPSHOT)) as f:
                snap = json.load(f)
            for i, (segment, info) in enumerate(self._where):
                if (segment.base == snap["segment"] and segment.header.hex() == snap["segment_id"]
                        and info.position + info.size == snap["position"]):
                    return dict(snap["producers"]), i + 1
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return {}, 0

    def _write_snapshot(self) -> None:
        state = self._producer_state()
        if not self._where:
            return
        segment, info = self._where[-1]
        snap = {"segment": segment.base, "segment_id": segment.header.hex(),
                "position": info.position + info.size, "producers": state}
        tmp = os.path.join(self.path, _SNAPSHOT + ".tmp")
        with open(tmp, "w") as f:
            json.dump(snap, f)
        os.replace(tmp, os.path.join(self.path, _SNAPSHOT))

    def _sync_dir(self) -> None:
        if self.fsync:
            fsync_path(self.path, os.O_RDONLY | os.O_DIRECTORY)


def _file_identity(path: str) -> Optional[tuple[int, int, int]]:
    """``(inode, mtime in ns, size)`` of a file, ``None`` if there is none: changes when
    the file is replaced or written."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _pwrite_all(fd: int, data: bytes, pos: int) -> None:
    """``pwrite`` all of ``data``: a full disk first writes short, then raises ENOSPC."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, pos)
        view, pos = view[written:], pos + written


def _unlink_segment(path: str) -> None:
    for p in (path, _index_path(path)):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def _load_segment(path: str, base: int, inode: int) -> Optional[_Segment]:
    """Read a segment's header and index; ``None`` if it is not (yet) a segment."""
    try:
        with open(path, "rb") as f:
            header = f.read(SEGMENT_HEADER.size)
    except FileNotFoundError:
        return None
    if len(header) < SEGMENT_HEADER.size or not header.startswith(SEGMENT_MAGIC):
        return None
    segment = _Segment(base, path, inode, header)
    try:
        with open(_index_path(path), "rb") as f:
            segment.frames = parse_index(f.read(), header)
    except FileNotFoundError:
        pass
    segment.indexed = len(segment.frames)
    return segment


def _scan_frames(segment: _Segment, file_size: int) -> None:
    """Add the complete, CRC-valid frames after the known ones; stop at a torn tail.

    Reads with ``pread`` rather than a mapping: a writer may truncate a torn tail
    concurrently, which would fault a mapped read."""
    if segment.frames and segment.data_end > file_size:  # index ahead of data: distrust it
        segment.frames, segment.indexed = [], 0
        segment.lost_frames = True
    start = segment.data_end
    with open(segment.path, "rb") as f:
        f.seek(start)
        tail = f.read(file_size - start)
    pos = 0
    while (info := parse_frame(tail, pos)) is not None:
        segment.frames.append(info._replace(position=start + pos))
        pos += info.size
    segment.size = file_size


def _with_offsets(records: pa.Table, first: int) -> pa.RecordBatch:
    """``records`` (APPEND_SCHEMA) as one RECORD_SCHEMA batch numbered from ``first``."""
    try:
        table = records.select(APPEND_SCHEMA.names)
    except KeyError as exc:
        raise TopicsError(f"append needs columns {APPEND_SCHEMA.names}, got {records.column_names}") from exc
    offsets = pa.array(np.arange(first, first + records.num_rows), pa.int64())
    return table.add_column(0, "offset", offsets).cast(RECORD_SCHEMA).combine_chunks().to_batches()[0]


def _clip(table: pa.Table, start: int, end: int) -> pa.Table:
    """The rows of a frame's table with ``start <= offset < end`` (offsets are sorted)."""
    column = table.column("offset").chunk(0)
    # A view of the buffer, not ``to_numpy()``: that imports pandas (half a second in
    # every fresh Spark Python worker that reads the log).
    offsets = np.frombuffer(column.buffers()[1], np.int64, len(column), column.offset * 8)
    lo, hi = np.searchsorted(offsets, [start, end])
    return table.slice(lo, hi - lo) if (lo, hi) != (0, len(offsets)) else table
