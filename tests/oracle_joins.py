"""The oracle's join scenarios on the Python side (``JoinScenarios.java``): topic ``in``
joined with topic ``in2``, values joined as ``"this+other"`` (``-`` for a missing side)."""
from __future__ import annotations

import random
from typing import Any, Callable, Optional

from oracle_scenarios import FLUSH_KEY, KEYS, S, WORDS, Scenario, strings, word_or_tombstone
from streamlib import Joined, JoinWindows, Materialized, Produced, StreamsBuilder, Topology

#: the stream–table join's grace in the ``-grace`` scenarios
GRACE = 5
#: the versioned table's history there (JoinScenarios.HISTORY): longer than any case
HISTORY = 10_000


def joiner(a: Optional[str], b: Optional[str]) -> str:
    return f"{'-' if a is None else a}+{'-' if b is None else b}"


def _out() -> Produced:
    return Produced.with_(S, S)


def stream_table(left: bool, grace: int) -> Callable[[], Topology]:
    def topology() -> Topology:
        builder = StreamsBuilder()
        materialized = Materialized.as_versioned("table", HISTORY) if grace else Materialized.as_("table")
        table = builder.table("in2", consumed=strings(), materialized=materialized)
        stream = builder.stream("in", consumed=strings())
        joined = Joined.with_(S, S, S, grace=grace)
        (stream.left_join if left else stream.join)(table, joiner, joined).to("out", produced=_out())
        return builder.build()
    return topology


def stream_stream(how: str, difference: int = 5, grace: int = 3) -> Callable[[], Topology]:
    def topology() -> Topology:
        builder = StreamsBuilder()
        a = builder.stream("in", consumed=strings())
        b = builder.stream("in2", consumed=strings())
        windows = JoinWindows.of_time_difference(difference, grace=grace)
        join = {"inner": a.join, "left": a.left_join, "outer": a.outer_join}[how]
        join(b, joiner, windows, stream_joined=Joined.with_(S, S, S)).to("out", produced=_out())
        return builder.build()
    return topology


def global_table(left: bool) -> Callable[[], Topology]:
    """``in`` joined with the global table ``in2`` on its value's first letter; the key
    selector returns None for values starting with "d" (KIP-962 for the left join)."""
    def topology() -> Topology:
        builder = StreamsBuilder()
        table = builder.global_table("in2", consumed=strings(), materialized=Materialized.as_("table"))
        stream = builder.stream("in", consumed=strings())
        selector = lambda k, v: None if v is None or v.startswith("d") else v[0]  # noqa: E731
        (stream.left_join if left else stream.join)(table, selector, joiner).to("out", produced=_out())
        return builder.build()
    return topology


def _tables() -> tuple[StreamsBuilder, Any, Any]:
    builder = StreamsBuilder()
    this = builder.table("in", consumed=strings(), materialized=Materialized.as_("this"))
    other = builder.table("in2", consumed=strings(), materialized=Materialized.as_("other"))
    return builder, this, other


def table_table(how: str) -> Callable[[], Topology]:
    def topology() -> Topology:
        builder, this, other = _tables()
        join = {"inner": this.join, "left": this.left_join, "outer": this.outer_join}[how]
        join(other, joiner).to_stream().to("out", produced=_out())
        return builder.build()
    return topology


def foreign_key(left: bool) -> Callable[[], Topology]:
    def topology() -> Topology:
        builder, this, other = _tables()
        (this.left_join if left else this.join)(other, joiner, foreign_key_extractor=lambda v: v[0]) \
            .to_stream().to("out", produced=_out())
        return builder.build()
    return topology


def _word_digit_or_tombstone(rng: random.Random) -> Optional[str]:
    return None if rng.random() < 0.15 else rng.choice(WORDS) + str(rng.randint(0, 9))


def _foreign_key_or_tombstone(rng: random.Random) -> Optional[str]:
    """A value whose first letter is a key of ``in2`` (or one it never has)."""
    return None if rng.random() < 0.15 else rng.choice([k for k in KEYS if k] + ["d"]) + str(rng.randint(0, 9))


def _repeated(records: list[dict]) -> list[dict]:
    """The records re-timed a few ms apart (never back), each followed, half of the
    time, by another of its key, topic and time: the shapes where Kafka's scan for
    expired outer-join records stops between two values of one key, side and time."""
    rng = random.Random(repr(records))
    out, now = [], 0
    for r in records:
        now += rng.choice((0, 1, 1, 2, 3, 4, 9))
        out.append({**r, "timestamp": now})
        while r["value"] is not None and rng.random() < 0.5:
            out.append({**r, "timestamp": now, "value": out[-1]["value"] + "'"})
    return out


def _scenario(topology: Callable[[], Topology], value=_word_digit_or_tombstone) -> Scenario:
    return Scenario(topology, S, value, other_value=word_or_tombstone)


JOIN_SCENARIOS: dict[str, Scenario] = {
    "stream-table-join": _scenario(stream_table(False, 0)),
    "stream-table-left-join": _scenario(stream_table(True, 0)),
    "stream-stream-join": _scenario(stream_stream("inner")),
    "stream-stream-left-join": _scenario(stream_stream("left")),
    "stream-stream-outer-join": _scenario(stream_stream("outer")),
    "table-table-join": _scenario(table_table("inner")),
    "table-table-left-join": _scenario(table_table("left")),
    "table-table-outer-join": _scenario(table_table("outer")),
    "fk-join": _scenario(foreign_key(False), _foreign_key_or_tombstone),
    "fk-left-join": _scenario(foreign_key(True), _foreign_key_or_tombstone),
    # issue 39's cases
    "global-join": _scenario(global_table(False), _foreign_key_or_tombstone),
    "global-left-join": _scenario(global_table(True), _foreign_key_or_tombstone),
    # time difference 0 and repeated records: several of one key, side and time in the
    # outer buffer, where Kafka's scan for expired records stops between them
    "stream-stream-outer-join-zero": Scenario(stream_stream("outer", 0, 8), S, _word_digit_or_tombstone,
                                              other_value=word_or_tombstone, adjust=_repeated),
}

# The stream–table joins with a grace period: where we deliberately differ (DESIGN.md
# "Joins"). Kafka (KIP-923) holds each stream record back for the grace period, then joins
# it with the table as of its timestamp; ours joins at once and, when a table update
# for an earlier time arrives later, emits a correction (header ``streamlib.update``,
# same key and timestamp): the late-update re-trigger. Kafka's results are therefore
# compared with our results *after* applying the corrections (:func:`final_results`),
# on inputs ended by a record that moves stream time past every grace period so that
# Kafka emits everything it holds. The ``-late`` scenarios let timestamps go back (late
# table records, tombstones, stream records past the grace); both sides keep the
# table's history for 10 s, longer than any case. One input shape is left out there:
# a tombstone at a time its key already has a version at — Kafka's store then forgets
# the delete when no older version exists, ours keeps it (README, "Joins with late
# table updates"; tests/unit/test_kstream_ktable_grace_join.py pins ours).


def _no_tombstone_on_a_version(records: list[dict]) -> list[dict]:
    """Moves each ``in2`` tombstone to the next time its key has no ``in2`` record at yet."""
    used: set[tuple] = set()
    for r in records:
        if r.get("topic") == "in2" and r["key"] is not None:
            if r["value"] is None:
                while (r["key"], r["timestamp"]) in used:
                    r["timestamp"] += 1
            used.add((r["key"], r["timestamp"]))
    return records


GRACE_SCENARIOS: dict[str, Scenario] = {
    name: Scenario(stream_table(left, GRACE), S, _word_digit_or_tombstone,
                   other_value=word_or_tombstone, in_order=True, null_keys=not left)
    for name, left in (("stream-table-join-grace", False), ("stream-table-left-join-grace", True))
}
GRACE_SCENARIOS.update({
    name: Scenario(stream_table(left, GRACE), S, _word_digit_or_tombstone, other_value=word_or_tombstone,
                   null_keys=not left, flush=True, adjust=_no_tombstone_on_a_version)
    for name, left in (("stream-table-join-grace-late", False), ("stream-table-left-join-grace-late", True))
})
JOIN_SCENARIOS.update(GRACE_SCENARIOS)


def final_results(records: list[dict]) -> list[tuple]:
    """Our grace join's output with its corrections applied: each correction (header
    ``streamlib.update``) replaces the results of the stream records it re-joined — the
    same key, timestamp and stream value (the joiner's left part) — and a ``None``
    correction retracts them. Sorted ``(key, value, timestamp)``, the flush record's
    results left out (Kafka still holds it back)."""
    current: dict[tuple, list] = {}
    for r in records:
        if r["key"] == FLUSH_KEY:
            continue
        if r["headers"]:
            assert r["headers"] == {"streamlib.update": "1"}, r
            # the stream value is what precedes the joiner's "+"; a retraction carries
            # none, so it applies to every result of that key and timestamp
            ident = (r["key"], r["timestamp"])
            for (key, ts, value), results in current.items():
                if (key, ts) == ident and (r["value"] is None or r["value"].split("+")[0] == value):
                    results[:] = [] if r["value"] is None else [r["value"]] * len(results)
            continue
        current.setdefault((r["key"], r["timestamp"], r["value"].split("+")[0]), []).append(r["value"])
    return sorted((key, v, ts) for (key, ts, _), results in current.items() for v in results)
