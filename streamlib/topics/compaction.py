"""Compaction of a local partition (``cleanup.policy=compact``): when it runs by itself,
which records survive, and the frames that hold them (offsets are preserved)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class Compaction:
    """When a ``cleanup.policy=compact`` partition compacts itself, and how long it keeps
    tombstones (Kafka's ``min.cleanable.dirty.ratio`` and ``delete.retention.ms``).

    A partition compacts after an append once the bytes written since its last
    compaction are at least ``min_dirty_ratio`` of the whole log and at least
    ``min_dirty_bytes`` (so a small log is not rewritten on every append: Kafka never
    cleans the active segment). A tombstone survives compactions until
    ``delete_retention_ms`` have passed since the first compaction that saw it, so a
    reader that was behind (a stale store copy catching up) still sees the delete.

    >>> Compaction.from_config({"cleanup.policy": "compact", "delete.retention.ms": "0"}).delete_retention_ms
    0
    >>> Compaction.from_config({}) is None
    True
    """

    min_dirty_ratio: float = 0.5
    delete_retention_ms: int = 24 * 60 * 60 * 1000
    min_dirty_bytes: int = 1 << 20

    @classmethod
    def from_config(cls, config: dict) -> Optional["Compaction"]:
        """The policy of a topic config, ``None`` unless ``cleanup.policy`` has ``compact``."""
        if "compact" not in str(config.get("cleanup.policy", "")).split(","):
            return None
        return cls(float(config.get("min.cleanable.dirty.ratio", cls.min_dirty_ratio)),
                   int(config.get("delete.retention.ms", cls.delete_retention_ms)),
                   int(config.get("streamlib.min.cleanable.bytes", cls.min_dirty_bytes)))


def latest_per_key(table: pa.Table, drop_tombstones_below: int) -> pa.Table:
    """Rows that survive compaction, in offset order: the latest per key, except
    tombstones at offsets below ``drop_tombstones_below``; keyless records all stay."""
    keyed = pc.is_valid(table["key"])
    latest = (table.filter(keyed).select(["key", "offset"]).group_by("key")
              .aggregate([("offset", "max")]).column("offset_max"))
    survivor = pc.or_(pc.invert(keyed), pc.is_in(table["offset"], value_set=latest))
    live = pc.or_(pc.or_(pc.invert(keyed), pc.is_valid(table["value"])),
                  pc.greater_equal(table["offset"], drop_tombstones_below))
    return table.filter(pc.and_(survivor, live))


def compacted_frames(table: pa.Table, start: int, end: int,
                      producers: dict[str, int]) -> list[tuple]:
    """Frames covering ``[start, end)`` exactly; the last carries the producer state."""
    batches = [b for b in table.combine_chunks().to_batches(max_chunksize=65536) if b.num_rows]
    if not batches:
        return [(None, start, end - 1, producers or None)]
    frames = []
    first = start
    for i, batch in enumerate(batches):
        last = end - 1 if i == len(batches) - 1 else batch.column(0)[-1].as_py()
        frames.append((batch, first, last, producers or None if i == len(batches) - 1 else None))
        first = last + 1
    return frames
