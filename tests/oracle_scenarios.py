"""The oracle's scenarios on the Python side: the same topologies as
``tests/oracle/src/main/java/streamlib/oracle/Scenarios.java``, and the seeded-random
inputs both sides run (a few keys, out-of-order and duplicate timestamps, tombstones,
null keys).

To add a scenario: add it to ``Scenarios.java`` (windowed ones in ``WindowScenarios.java``,
joins in ``JoinScenarios.java``) and to :data:`SCENARIOS` here (``oracle_windows.py``,
``oracle_joins.py``), with the same name.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Optional

from streamlib import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder, Topology

S = Serdes.string()
L = Serdes.long()
KEYS = ("a", "b", "c", None)
WORDS = ("x", "y", "z", "w")
#: the key of the last record of ``in_order`` scenarios: no table ever has it
FLUSH_KEY = "flush"


@dataclass(frozen=True)
class Scenario:
    """A topology reading string keys and values from ``in`` and writing ``out``."""

    topology: Callable[[], Topology]
    out_value_serde: object
    #: One random input value (``None``: a tombstone).
    value: Callable[[random.Random], Optional[str]]
    #: One random value of topic ``in2`` (joins' other side); ``None``: one input topic.
    other_value: Optional[Callable[[random.Random], Optional[str]]] = None
    #: Timestamps never go back, and a last record (key ``FLUSH_KEY``) moves stream time
    #: far ahead (the grace joins, see ``oracle_joins.py``).
    in_order: bool = False
    #: ``None`` keys on topic ``in`` (Kafka 4.3.1's grace left join fails on them:
    #: its stream buffer cannot hold a null key)
    null_keys: bool = True
    #: End with the ``FLUSH_KEY`` record even when timestamps go back (``in_order`` does).
    flush: bool = False
    #: Rewrites the random records (both sides get the rewritten ones).
    adjust: Optional[Callable[[list[dict]], list[dict]]] = None


def strings() -> Consumed:
    return Consumed.with_(S, S)


def wordcount() -> Topology:
    builder = StreamsBuilder()
    (builder.stream("in", consumed=strings())
     .flat_map_values(lambda v: v.split(" "))
     .group_by(lambda k, word: word, Grouped.with_(S, S))
     .count(materialized=Materialized.as_("counts"))
     .to_stream().to("out", produced=Produced.with_(S, L)))
    return builder.build()


def stream_count() -> Topology:
    builder = StreamsBuilder()
    (builder.stream("in", consumed=strings()).group_by_key()
     .count(materialized=Materialized.as_("counts"))
     .to_stream().to("out", produced=Produced.with_(S, L)))
    return builder.build()


def stream_reduce() -> Topology:
    builder = StreamsBuilder()
    (builder.stream("in", consumed=strings()).group_by_key()
     .reduce(lambda a, b: str(int(a) + int(b)), materialized=Materialized.as_("sums"))
     .to_stream().to("out", produced=Produced.with_(S, S)))
    return builder.build()


def table_aggregate() -> Topology:
    builder = StreamsBuilder()
    (builder.table("in", consumed=strings(), materialized=Materialized.as_("source"))
     .group_by(lambda k, v: (v, k), Grouped.with_(S, S))
     .aggregate(lambda: 0, lambda k, v, agg: agg + 1 + len(v), lambda k, v, agg: agg - 1 - len(v),
                materialized=Materialized.as_("agg").with_value_serde(L))
     .to_stream().to("out", produced=Produced.with_(S, L)))
    return builder.build()


def table_reduce() -> Topology:
    builder = StreamsBuilder()
    (builder.table("in", consumed=strings(), materialized=Materialized.as_("source"))
     .group_by(lambda k, v: (v[0], v[1:]), Grouped.with_(S, S))
     .reduce(lambda a, b: str(int(a) + int(b)), lambda a, b: str(int(a) - int(b)),
             materialized=Materialized.as_("sums"))
     .to_stream().to("out", produced=Produced.with_(S, S)))
    return builder.build()


def count_filter() -> Topology:
    builder = StreamsBuilder()
    (builder.stream("in", consumed=strings()).group_by_key()
     .count(materialized=Materialized.as_("counts"))
     .filter(lambda k, n: n % 2 == 0)
     .to_stream().to("out", produced=Produced.with_(S, L)))
    return builder.build()


def table_filters() -> Topology:
    builder = StreamsBuilder()
    (builder.table("in", consumed=strings(), materialized=Materialized.as_("source"))
     .filter(lambda k, v: int(v) % 2 == 0)
     .map_values(lambda v: v + "!")
     .filter_not(lambda k, v: v.startswith(("0", "2")))
     .to_stream().to("out", produced=Produced.with_(S, S)))
    return builder.build()


def count_regroup() -> Topology:
    builder = StreamsBuilder()
    (builder.stream("in", consumed=strings()).group_by_key()
     .count(materialized=Materialized.as_("counts"))
     .group_by(lambda k, n: ("even" if n % 2 == 0 else "odd", k), Grouped.with_(S, S))
     .count(materialized=Materialized.as_("parity"))
     .to_stream().to("out", produced=Produced.with_(S, L)))
    return builder.build()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))


def number_or_tombstone(rng: random.Random) -> Optional[str]:
    return None if rng.random() < 0.15 else str(rng.randint(-3, 9))


def word_or_tombstone(rng: random.Random) -> Optional[str]:
    return None if rng.random() < 0.2 else rng.choice(WORDS)


def _letter_digit_or_tombstone(rng: random.Random) -> Optional[str]:
    return None if rng.random() < 0.2 else rng.choice("pq") + str(rng.randint(0, 9))


SCENARIOS: dict[str, Scenario] = {
    # flat_map_values on a null value fails in Kafka Streams too: no tombstones here.
    "wordcount": Scenario(wordcount, L, _sentence),
    "stream-count": Scenario(stream_count, L, number_or_tombstone),
    "stream-reduce": Scenario(stream_reduce, S, number_or_tombstone),
    "table-aggregate": Scenario(table_aggregate, L, word_or_tombstone),
    "table-reduce": Scenario(table_reduce, S, _letter_digit_or_tombstone),
    "count-filter": Scenario(count_filter, L, number_or_tombstone),
    "table-filters": Scenario(table_filters, S, number_or_tombstone),
    "count-regroup": Scenario(count_regroup, L, number_or_tombstone),
}


def _more() -> None:
    # imported here: they build on this module's helpers
    from oracle_joins import JOIN_SCENARIOS
    from oracle_windows import WINDOW_SCENARIOS
    SCENARIOS.update(WINDOW_SCENARIOS)
    SCENARIOS.update(JOIN_SCENARIOS)


_more()


def random_records(scenario: Scenario, rng: random.Random) -> list[dict]:
    """1-25 records: keys from a few (and None), timestamps that go back and repeat;
    with two input topics, each record goes to either."""
    records, now = [], rng.randint(0, 50)
    steps = (0, 0, 1, 3, 5, 10) if scenario.in_order else (-20, -3, 0, 0, 1, 5, 10)
    for _ in range(rng.randint(1, 25)):
        now = max(0, now + rng.choice(steps))
        if scenario.other_value is not None and rng.random() < 0.5:
            records.append({"key": rng.choice(KEYS), "value": scenario.other_value(rng), "timestamp": now,
                            "topic": "in2"})
        else:
            key = rng.choice(KEYS if scenario.null_keys else KEYS[:-1])
            records.append({"key": key, "value": scenario.value(rng), "timestamp": now})
    if scenario.in_order or scenario.flush:
        last = max(r["timestamp"] for r in records)
        records.append({"key": FLUSH_KEY, "value": "end", "timestamp": last + 1000})
    return scenario.adjust(records) if scenario.adjust else records


def cases(name: str, count: int, seed: int = 20240610) -> list[dict]:
    """``count`` seeded-random cases of scenario ``name`` (the same on every run)."""
    rng = random.Random(f"{seed}-{name}")
    return [{"scenario": name, "case": i, "records": random_records(SCENARIOS[name], rng)}
            for i in range(count)]
