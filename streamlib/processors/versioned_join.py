"""Stream–table join with a grace period: the late-update re-trigger of the dual
streaming model (Sax et al., "Streams and Tables: Two Sides of the Same Coin", 2018).

Two nodes share a versioned store of the table's history, kept for the history
retention (the grace unless the table is ``Materialized.as_versioned``) behind the
table's time (its largest timestamp), and a buffer of stream records, kept for the
grace behind the stream's time (the largest timestamp of a stream record joined) —
Kafka's two clocks (its versioned store and its KIP-923 stream buffer):

- the stream side joins each record with the table version valid at the record's
  timestamp, emits the result at once (no header) and buffers the record;
- the table side adds each table update to the history as the version valid from its
  timestamp; when older than buffered records of its key, it re-joins exactly the
  records it now applies to (timestamp ≥ the update's and before the key's next newer
  version) and emits the corrected results with the record's key, timestamp and
  headers plus ``streamlib.update: b"1"``.

Both sides run in one task (the table side is a child of the table's node), so
"late" means late in processing order. An inner join whose record had no match and
gets one from a late version emits that result for the first time (no header); one
whose match a late tombstone removes emits a ``None`` value with the header (a
retraction).
"""
from __future__ import annotations

from typing import Any, Optional

from ..node_kinds import STREAM_TABLE_JOIN_UPDATE, STREAM_TABLE_JOIN_VERSIONED
from .base import Processor
from .drops import Where
from .record import Change, Headers, Record
from .stores.stream_buffer import StreamBuffer
from .stores.versioned import VersionedKeyValueStore
from .registry import processes

#: the header of a corrected result, and its value
UPDATE_HEADER = "streamlib.update"
UPDATE_VALUE = b"1"


def with_update_header(headers: Headers) -> Headers:
    """``headers`` plus ``streamlib.update: b"1"`` (replacing an earlier one)."""
    return tuple(h for h in headers if h[0] != UPDATE_HEADER) + ((UPDATE_HEADER, UPDATE_VALUE),)


class _VersionedJoin(Processor):
    """What both sides share: the stores, the joiner and the join type."""

    def init(self) -> None:
        params = self.node.params
        self.versions: VersionedKeyValueStore = self.context.store(params.versions)
        self.buffer: StreamBuffer = self.context.store(params.buffer)
        self.joiner = params.joiner
        self.left = params.left
        self.grace_ms = params.grace_ms
        self._time_key = f"{params.buffer}.stream_time"

    @property
    def stream_time(self) -> int:
        """The largest timestamp of a stream record joined (task state): what the buffer
        keeps the grace behind. Table records do not move it (Kafka's buffer)."""
        return self.context.get_long(self._time_key)

    @property
    def buffered_from(self) -> int:
        """The oldest timestamp the buffer still holds records for: Kafka evicts a
        record once the stream time reaches its timestamp + grace."""
        return self.buffered_since(self.stream_time)

    def buffered_since(self, stream_time: int) -> int:
        """:attr:`buffered_from` at ``stream_time``."""
        return stream_time - self.grace_ms + 1


@processes(STREAM_TABLE_JOIN_VERSIONED)
class VersionedStreamTableJoinProcessor(_VersionedJoin):
    """The stream side: join as of the record's timestamp, emit, buffer."""


    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if value is None or (key is None and not self.left):
            self.drop("null_value" if value is None else "null_key", record)
            return
        if key is None:
            # a left join joins a None key with no row and nothing can correct it (KIP-962)
            self.forward(record.with_value(self.joiner(value, None)))
            return
        joined = self.join_one(key, value, record.timestamp, record.headers, record.topic, record.partition,
                               record.offset)
        if joined is not None:
            self.forward(record.with_value(joined[0]))

    def join_one(self, key: Any, value: Any, timestamp: int, headers: Headers, topic: str, partition: int,
                 offset: int) -> Optional[tuple[Any]]:
        """:meth:`process` of a record with a key and a value, given as its fields:
        ``(result,)`` to forward, or None. The runtime's batch loop calls it directly
        (``runtime.versioned_joined``)."""
        versions = self.versions
        stream_time = self.stream_time
        if timestamp > stream_time:
            self.context.put_long(self._time_key, timestamp)
            stream_time = timestamp
        row = versions.get_as_of(key, timestamp)
        if row is None and versions.forgot(key, timestamp):
            # the table's row at that time is gone from its history: joining with no row
            # would be a silently wrong answer (Kafka gives one); count and log the drop
            self.drop("expired_table_version", Where(topic, partition, offset),
                      detail="older than the table's history (history_retention), whose version for "
                      "that time has expired")
            return None
        other = None if row is None else row[0]
        joined = (self.joiner(value, other),) if other is not None or self.left else None
        # a record the grace has passed, or older than the table's history, cannot be
        # corrected: no later update may apply to it (those are refused, or not re-joined)
        if timestamp >= max(self.buffered_since(stream_time), versions.history_start):
            self.buffer.put(key, value, timestamp, headers)
        return joined

    def watermark(self) -> int:
        return self.buffered_from - 1

    def flush(self) -> None:
        """Expire what the grace no longer covers (re-joins already ignore it)."""
        self.buffer.expire(self.buffered_from)
        self.versions.expire()


@processes(STREAM_TABLE_JOIN_UPDATE)
class VersionedTableUpdateProcessor(_VersionedJoin):
    """The table side: record the version, re-join the buffered records it applies to."""

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            return
        change: Change = record.value
        new, since = change.new, record.timestamp
        versions = self.versions
        before = versions.get_as_of(key, since)
        until = versions.next_version_after(key, since)
        if not versions.put(key, new, since):
            # older than the history: no join sees it
            self.drop("expired_table_version", record, detail="a table update older than the table's "
                      "history (history_retention)")
            return
        old = None if before is None else before[0]
        if old == new:
            return    # the records it applies to met this value already: nothing to correct
        had_result = old is not None or self.left
        first = max(since, self.buffered_from)
        for timestamp, value, headers in self.buffer.fetch(key, first, None if until is None else until - 1):
            if new is None and not self.left:
                if not had_result:
                    continue
                result: Any = None                # the inner join's match is gone
            else:
                result = self.joiner(value, new)
            self.forward(Record(key, result, timestamp,
                                with_update_header(headers) if had_result else headers,
                                record.topic, record.partition, record.offset))
