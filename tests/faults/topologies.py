"""The topologies the fault harness runs, by name.

Each entry says how to build the topology, what input to produce, which output
topics and stores to compare with a failure-free run, and how (see
:class:`FaultTopology`). Add a topology with :func:`register`; the harness, the
``make test`` fault test and ``make faults`` pick it up.

Each output topic names the check that fits its semantics (:class:`Output`): a
changelog stream keeps its latest value per key, final results appear exactly once,
a join with grace keeps the latest result per stream record. The local log sink
writes a batch atomically and a re-run batch is recognised (DESIGN.md "Processing
guarantee"), so on the embedded log ``at_least_once`` and ``exactly_once`` must both
give *exact* output: no loss and no duplicate, whichever guarantee a topology runs.
"""
from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: engine helpers

from datetime import timedelta  # noqa: E402

from streamlib import (Consumed, Joined, Materialized, Produced, Serde, Serdes,  # noqa: E402
                       StreamsBuilder, Suppressed, TimeWindows, Topology)
from engine import wordcount_topology  # noqa: E402

#: ``(key, value, timestamp)`` tuples, serialized with the topic's serdes.
Records = list[tuple]


@dataclass(frozen=True)
class InputTopic:
    partitions: int
    records: Records
    key_serde: Serde = field(default_factory=Serdes.string)
    value_serde: Serde = field(default_factory=Serdes.string)


#: The checks an output topic can ask for (see the harness's ``compare``).
CHECKS = ("latest", "increasing", "once", "per-record")


@dataclass(frozen=True)
class Output:
    """An output topic's serdes and how the faulty run's records must match the
    failure-free run's:

    * ``latest``: the latest value per key is the same (a table's changelog stream);
    * ``increasing``: that, and every key's values strictly increase (a count: a
      re-emitted update shows up as a repeat);
    * ``once``: the same ``(key, value)`` records, each key exactly once (final
      results: no loss, no duplicate, no early result);
    * ``per-record``: the same latest value per ``(key, timestamp)`` (a join with
      grace: a stream record's result may be corrected later; the order of first
      results and corrections depends on micro-batch cuts), a correction to ``None``
      (a retraction) counting as no result, and only corrections carry the
      ``streamlib.update`` header (no corrupted output).
    """

    key_serde: Serde
    value_serde: Serde
    check: str = "latest"

    def __post_init__(self) -> None:
        if self.check not in CHECKS:
            raise ValueError(f"check must be one of {CHECKS}, not {self.check!r}")


@dataclass(frozen=True)
class FaultTopology:
    """One topology under fault injection.

    ``build`` must be a module-level function (Spark workers import it by name).
    ``inputs(seed, n)`` makes the input (``n`` records, or the topology's default).
    ``outputs`` maps each output topic to its :class:`Output`; ``stores`` are
    compared entry by entry (window stores as ``(key, window start, value)``).
    """

    name: str
    build: Callable[[], Topology]
    inputs: Callable[[int], dict[str, InputTopic]]
    outputs: dict[str, Output]
    stores: tuple[str, ...]
    config: dict = field(default_factory=dict)


REGISTRY: dict[str, FaultTopology] = {}


def register(topology: FaultTopology) -> FaultTopology:
    REGISTRY[topology.name] = topology
    return topology


WORDS = [f"w{i:03d}" for i in range(300)]


def count_inputs(seed: int, n: int = 400) -> dict[str, InputTopic]:
    rng = random.Random(seed)
    text = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) for _ in range(n)]
    return {"lines": InputTopic(2, [(None, line, 1_000 + i) for i, line in enumerate(text)])}


register(FaultTopology(
    name="counts",
    build=wordcount_topology,
    inputs=count_inputs,
    outputs={"counts-out": Output(Serdes.string(), Serdes.long(), "increasing")},
    stores=("counts",),
    config={"max_records_per_batch": 100},
))

MINUTE = 60_000
S, L = Serdes.string(), Serdes.long()
WINDOWED = Serdes.time_windowed(S, MINUTE)


def final_counts_topology() -> Topology:
    """1-minute tumbling counts per key with 10 s grace, final results only."""
    builder = StreamsBuilder()
    (builder.stream("clicks", consumed=Consumed.with_(S, S)).group_by_key()
     .windowed_by(TimeWindows.of(timedelta(minutes=1), grace=timedelta(seconds=10)))
     .count(materialized=Materialized.as_("minute-counts"))
     .suppress(Suppressed.until_window_closes())
     .to_stream().to("minute-finals", produced=Produced.with_(WINDOWED, L)))
    return builder.build()


def click_inputs(seed: int, n: int = 300) -> dict[str, InputTopic]:
    """Event times that move forward (windows close during the run), 10 % out of
    order within grace, 2 % too late (dropped). One partition: which records are late
    depends on stream time, and across partitions that depends on micro-batch cuts
    (the application's stream time), which a restart may move."""
    rng = random.Random(seed)
    clock, records = seed * 3_600_000, []
    for _ in range(n):
        clock += rng.randint(0, 4_000)
        late = rng.choices([0, rng.randint(1, 8_000), rng.randint(20_000, 40_000)], [88, 10, 2])[0]
        records.append((f"user{rng.randrange(6)}", "click", max(clock - late, 0)))
    return {"clicks": InputTopic(1, records)}


register(FaultTopology(
    name="final-counts",
    build=final_counts_topology,
    inputs=click_inputs,
    outputs={"minute-finals": Output(WINDOWED, L, "once")},
    stores=("minute-counts",),
    config={"max_records_per_batch": 40},
))


def enrich(order: str, customer: str) -> str:
    return f"{order}@{customer}"


def grace_join_topology() -> Topology:
    """Orders joined with the customer table valid at each order's time (a versioned
    table, 1 h grace): a late table update re-triggers the orders it now applies to."""
    builder = StreamsBuilder()
    customers = builder.table("customers", consumed=Consumed.with_(S, S),
                              materialized=Materialized.as_("customers"))
    joined = Joined.with_(S, S, S, grace=timedelta(hours=1))
    (builder.stream("orders", consumed=Consumed.with_(S, S))
     .join(customers, enrich, joined).to("enriched", produced=Produced.with_(S, S)))
    return builder.build()


def order_inputs(seed: int, n: int = 300) -> dict[str, InputTopic]:
    """Orders and customer updates on two co-partitioned topics, times moving forward;
    a fifth of the updates are late (up to 2 min back, well within grace) and some are
    deletes. Everything within grace: the final result per order does not depend on
    how micro-batches cut the two topics."""
    rng = random.Random(seed)
    clock, orders, customers = seed * 3_600_000, [], []
    for i in range(n):
        clock += rng.randint(0, 2_000)
        key = f"c{rng.randrange(10)}"
        if rng.random() < 0.4:
            late = rng.randint(1, 120_000) if rng.random() < 0.2 else 0
            value = None if rng.random() < 0.05 else f"v{i}"
            customers.append((key, value, max(clock - late, 0)))
        else:
            orders.append((key, f"o{i}", clock))
    return {"customers": InputTopic(2, customers), "orders": InputTopic(2, orders)}


register(FaultTopology(
    name="grace-join",
    build=grace_join_topology,
    inputs=order_inputs,
    outputs={"enriched": Output(S, S, "per-record")},
    stores=("customers",),
    config={"max_records_per_batch": 40, "processing_guarantee": "exactly_once"},
))
