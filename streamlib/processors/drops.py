"""Dropped records: every drop is counted per reason and node, and logged.

One function, :func:`count_drop`, counts a drop into a task's metrics (the totals
``dropped_records`` and, for records a handler skipped, ``skipped_records``, and
``drops``: reason -> node -> count) and logs it as one warning line naming the node,
the reason and the record's topic, partition and offset, at most one line per node and
reason every :data:`DROP_WARNING_INTERVAL` seconds. :func:`add_drops` merges those
counts across tasks, batches and Spark executors.
"""
from __future__ import annotations

import logging
import time
from typing import Any, NamedTuple, Optional

_drops = logging.getLogger("streamlib.drops")
#: seconds between two warnings for drops of one reason at one node
DROP_WARNING_INTERVAL = 10.0
_last_drop_warning: dict[tuple[str, str], float] = {}

#: why a record was dropped (the ``reason`` of ``metrics()["drops"]``) -> what it means
DROP_REASONS = {
    "late": "its window (or session) had closed: stream time passed its end + grace",
    "null_key": "its key is None (aggregations, joins, tables; or a selector returned None)",
    "null_value": "its value is None (aggregations and stream joins)",
    "null_foreign_key": "the foreign-key extractor returned None (inner foreign-key join)",
    "stale_response": "a foreign-key join answer for a left value that has changed since",
    "expired_table_version": "older than a versioned table's history (history_retention)",
    "invalid_timestamp": "its timestamp extractor returned a negative timestamp",
    "deserialization_error": "its key or value could not be deserialized (log_and_continue)",
    "future_timestamp": "its timestamp is more than max_future_skew_ms ahead of the wall clock "
                        "(log_and_continue)",
    "dead_letter": "the deserialization handler sent it to the dead-letter topic",
}
#: reasons that are records the deserialization handler skipped (``skipped_records``)
SKIPPED_REASONS = frozenset({"deserialization_error", "future_timestamp"})


class Where(NamedTuple):
    """Where a dropped record came from."""

    topic: Optional[str]
    partition: int
    offset: int


def count_drop(metrics: dict[str, Any], node: str, reason: str, where: Any = None,
               count: int = 1, detail: str = "") -> None:
    """Count ``count`` records that ``node`` dropped for ``reason`` (a key of
    :data:`DROP_REASONS`) into ``metrics`` and log it; ``where``: the (first) dropped
    record, anything with ``topic``, ``partition`` and ``offset`` (a ``Record``, a
    :class:`Where`) or ``None``; ``detail``: more words for the log line."""
    if count <= 0:
        return
    if reason not in DROP_REASONS:
        raise ValueError(f"unknown drop reason {reason!r}; known: {sorted(DROP_REASONS)}")
    metrics["dropped_records"] = metrics.get("dropped_records", 0) + count
    if reason in SKIPPED_REASONS:
        metrics["skipped_records"] = metrics.get("skipped_records", 0) + count
    by_node = metrics.setdefault("drops", {}).setdefault(reason, {})
    by_node[node] = by_node.get(node, 0) + count
    _warn(node, reason, where, count, detail)


def _warn(node: str, reason: str, where: Any, count: int, detail: str) -> None:
    now = time.monotonic()
    if now - _last_drop_warning.get((node, reason), -DROP_WARNING_INTERVAL) < DROP_WARNING_INTERVAL:
        return
    _last_drop_warning[(node, reason)] = now
    at = ("" if where is None or getattr(where, "topic", None) is None
          else f" from topic {where.topic!r} partition {where.partition} offset {where.offset}")
    _drops.warning("%s dropped %d record(s)%s, reason %s: %s (more drops of this kind are "
                   "counted in metrics()['drops'] and logged at most every %.0f s)",
                   node, count, at, reason, detail or DROP_REASONS[reason], DROP_WARNING_INTERVAL)


def add_drops(total: dict[str, dict[str, int]], drops: Optional[dict[str, dict[str, int]]]) -> None:
    """Add ``drops`` (reason -> node -> count) into ``total``."""
    for reason, by_node in (drops or {}).items():
        into = total.setdefault(reason, {})
        for node, count in by_node.items():
            into[node] = into.get(node, 0) + int(count)


def row_where(rows: Any, index: int) -> Where:
    """:class:`Where` of row ``index`` of an Arrow table of source or stage rows."""
    return Where(rows.column("topic")[index].as_py(), rows.column("partition")[index].as_py(),
                 rows.column("offset")[index].as_py())
