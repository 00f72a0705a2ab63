"""Frozen copies of a store's replica for readers in other processes (Spark tasks).

Spark tasks cannot see the driver's pinned versions, so a store someone made a table
of gets, for published versions, RocksDB checkpoints of its partitions (hard
links, taken between two applies) under ``<replicas>/<store>/_versions/<batch>-<id>``.
A DataFrame reads one such copy, so all its tasks read the same batch. A superseded
copy is deleted :data:`KEEP_SECONDS` after a newer one replaced it.
"""
from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from typing import Optional

#: How long a superseded copy stays readable (a Spark query planned against it has this
#: long to open it).
KEEP_SECONDS = 300.0
#: New copies at most this often while batches keep coming: each copy flushes the
#: replica's memtable and pins the files it links, so a copy per batch would churn.
MIN_INTERVAL_SECONDS = 2.0
VERSIONS = "_versions"


@dataclass(frozen=True)
class FrozenCopy:
    """Where one version of a store can be read: one directory per store partition.

    ``secondary``: the directories are live task copies (a store without changelog),
    read as RocksDB secondaries.

    >>> FrozenCopy.from_json(FrozenCopy(3, ("/a/0",)).to_json())
    FrozenCopy(batch=3, partitions=('/a/0',), secondary=False)
    """

    batch: int
    partitions: tuple[str, ...]
    secondary: bool = False

    def to_json(self) -> str:
        return json.dumps({"batch": self.batch, "partitions": list(self.partitions),
                           "secondary": self.secondary})

    @classmethod
    def from_json(cls, text: str) -> "FrozenCopy":
        data = json.loads(text)
        return cls(int(data["batch"]), tuple(data["partitions"]), bool(data["secondary"]))


def new_version_dir(store_dir: str, batch: int) -> str:
    return os.path.join(store_dir, VERSIONS, f"{batch:012d}-{uuid.uuid4().hex[:8]}")


def supersede(path: Optional[str]) -> None:
    """Mark a copy as replaced now: it is kept for :data:`KEEP_SECONDS` from here."""
    if path is not None and os.path.isdir(path):
        os.utime(path)


def collect_garbage(store_dir: str, keep: Optional[str], now: Optional[float] = None) -> None:
    """Delete copies superseded more than :data:`KEEP_SECONDS` ago (never ``keep``)."""
    root = os.path.join(store_dir, VERSIONS)
    if not os.path.isdir(root):
        return
    now = time.time() if now is None else now
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if path == keep:
            continue
        try:
            age = now - os.stat(path).st_mtime
        except FileNotFoundError:
            continue
        if age > KEEP_SECONDS:
            shutil.rmtree(path, ignore_errors=True)
