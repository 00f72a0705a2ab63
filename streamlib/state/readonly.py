"""Read-only views of a store for interactive queries, safe beside a live writer.

A view opens the store's RocksDB as a *secondary* instance: no lock is taken, the writer
may open, write and compact meanwhile, and the view sees whole WriteBatches only, i.e.
whole committed batches. Measured against a writer process that reopens the store for
every batch: read-only mode failed ~1-3% of opens (files vanished mid-open); secondary
mode failed none of ~2000, opened in ~5 ms, and never showed a partial batch.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Iterator, Optional, Sequence

from streamlib.state.bounds import Bounds
from streamlib.state.reads import KeyValue, KeyValueReads
from streamlib.state.rocksdb import RocksDB, db_identity


class ReadOnlyKeyValueStore(KeyValueReads):
    """get/range/all/prefix_scan/approximate_num_entries over bytes, as of the last
    committed batch when opened (or :meth:`refresh` ed)."""

    def __init__(self, path: str | os.PathLike, timeout: float):
        self._path = path
        self._timeout = timeout
        self._scratch_dir = tempfile.mkdtemp(prefix="streamlib-view-")
        try:
            self._db, self._identity = self._open()
        except BaseException:
            shutil.rmtree(self._scratch_dir, ignore_errors=True)
            raise

    def _open(self) -> tuple[RocksDB, Optional[bytes]]:
        identity = db_identity(self._path)   # before opening: a later change means reopen
        return RocksDB.open_secondary(self._path, self._scratch_dir, self._timeout), identity

    def get_many(self, keys: Sequence[bytes]) -> list[Optional[bytes]]:
        return self._db.get_many(keys)

    def _scan(self, bounds: Bounds) -> Iterator[KeyValue]:
        return self._db.scan(bounds)

    def _scan_reverse(self, bounds: Bounds) -> Iterator[KeyValue]:
        return self._db.scan_reverse(bounds)

    def approximate_num_entries(self) -> int:
        return self._db.approximate_num_entries()

    def refresh(self) -> None:
        """Catch up with what the writer committed since the view was opened; reopen if
        the writer replaced its copy meanwhile (a dropped and restored store: a secondary
        would keep following the deleted files)."""
        identity = db_identity(self._path)
        if identity is None or identity == self._identity:
            self._db.catch_up()
            return
        self._db.close()
        self._db, self._identity = self._open()

    def close(self) -> None:
        self._db.close()
        shutil.rmtree(self._scratch_dir, ignore_errors=True)

    def __enter__(self) -> ReadOnlyKeyValueStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_read_only_store(path: str | os.PathLike, timeout: float = 10.0) -> ReadOnlyKeyValueStore:
    """Open the store at ``path`` (``task_dir/<store>``) for reading. Raises
    FileNotFoundError if no store was ever committed there."""
    return ReadOnlyKeyValueStore(path, timeout)
