"""Frozen copies of a store's replica for readers in other processes (Spark tasks).

Spark tasks cannot see the driver's pinned versions, so for a store someone made a
table of, every published version also gets RocksDB checkpoints of its partitions
(hard links, taken between two applies) under ``<replica>/<store>/_versions/<name>``;
the file ``<replica>/<store>/TABLE`` names the newest (replaced atomically). A Spark
query plans against the copy TABLE names, so all its tasks read the same batch.
Superseded copies are deleted after :data:`KEEP_SECONDS` (a query planned against one
opens it well before then).
"""
from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from typing import Optional

#: How long a superseded copy stays readable.
KEEP_SECONDS = 60.0
POINTER = "TABLE"
VERSIONS = "_versions"


def write_pointer(store_dir: str, batch: int, partitions: list[str], secondary: bool = False) -> None:
    """Name the copy readers should plan against (atomically)."""
    os.makedirs(store_dir, exist_ok=True)
    tmp = os.path.join(store_dir, f".{POINTER}.{uuid.uuid4().hex}")
    with open(tmp, "w") as f:
        json.dump({"batch": batch, "partitions": partitions, "secondary": secondary}, f)
    os.replace(tmp, os.path.join(store_dir, POINTER))


def read_pointer(store_dir: str) -> dict:
    """``{"batch", "partitions", "secondary"}`` of the newest copy.

    >>> import tempfile; d = tempfile.mkdtemp()
    >>> write_pointer(d, 3, ["/x/0"]); read_pointer(d)["partitions"]
    ['/x/0']
    """
    path = os.path.join(store_dir, POINTER)
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"no queryable copy of the store at {store_dir}: call "
                                "Streams.table(name) on the application first") from None


def new_version_dir(store_dir: str, batch: int) -> str:
    return os.path.join(store_dir, VERSIONS, f"{batch:012d}-{uuid.uuid4().hex[:8]}")


def collect_garbage(store_dir: str, keep: Optional[str], now: Optional[float] = None) -> None:
    """Delete superseded copies older than :data:`KEEP_SECONDS` (never ``keep``)."""
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
