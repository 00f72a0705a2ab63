"""The stream–table join with grace used by the driver and Spark tests, and the plain
Python oracle its final results must equal."""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Optional

from streamlib import Consumed, Joined, Materialized, Produced, Serdes, StreamsBuilder

S = Serdes.string()
UPDATE = "streamlib.update"


def joiner(value: Any, other: Any) -> str:
    return f"{value}⋈{other}"


def grace_join(grace_ms: int, left: bool = False, both: bool = False, history_ms: Optional[int] = None):
    """``stream`` joined (or left-joined) with table ``table`` with ``grace_ms``, to
    ``out``; with ``both``, the inner join to ``out`` and the left join to ``out-left``;
    with ``history_ms``, the table is versioned with that history retention."""
    builder = StreamsBuilder()
    materialized = None if history_ms is None else Materialized.as_versioned("versioned-table", history_ms)
    table = builder.table("table", consumed=Consumed.with_(S, S), materialized=materialized)
    stream = builder.stream("stream", consumed=Consumed.with_(S, S))
    joined = Joined.with_(S, S, S, grace=timedelta(milliseconds=grace_ms))
    produced = Produced.with_(S, S)
    if both:
        stream.join(table, joiner, joined).to("out", produced=produced)
        stream.left_join(table, joiner, joined).to("out-left", produced=produced)
    else:
        (stream.left_join if left else stream.join)(table, joiner, joined).to("out", produced=produced)
    return builder.build()


def oracle(events: list[tuple], left: bool) -> dict[tuple, Optional[str]]:
    """The final result per stream record ``(key, timestamp)``: its value joined with the
    table version valid at its timestamp (the newest version not after it; for equal
    timestamps the last one written), ``None`` for an inner join without a version.
    ``events``: ("t", key, value or None, ts) and ("s", key, value, ts), in produce order."""
    versions: dict[str, dict[int, Optional[str]]] = {}
    for kind, key, value, ts in events:
        if kind == "t":
            versions.setdefault(key, {})[ts] = value
    expected = {}
    for kind, key, value, ts in events:
        if kind != "s":
            continue
        valid = [t for t in versions.get(key, {}) if t <= ts]
        other = versions[key][max(valid)] if valid else None
        expected[(key, ts)] = joiner(value, other) if other is not None or left else None
    return expected


def final_results(records: list[tuple]) -> dict[tuple, Optional[str]]:
    """The last result per ``(key, timestamp)`` of ``(key, value, timestamp, headers)``
    output records, with a check that only corrections carry the update header: a
    result is first (no header) unless an earlier result had the same key and timestamp."""
    final: dict[tuple, Optional[str]] = {}
    for key, value, ts, headers in records:
        corrected = (key, ts) in final and final[(key, ts)] is not None
        assert (UPDATE in headers) == corrected, (key, value, ts, headers)
        final[(key, ts)] = value
    return final
