"""The topologies the fault harness runs, by name.

Each entry says how to build the topology, what input to produce, which output
topics and stores to compare with a failure-free run, and how (see
:class:`FaultTopology`). Add a topology with :func:`register`; the harness, the
``make test`` fault test and ``make faults`` pick it up. Windowed and join
topologies (windowed final results, stream-table join with grace) are to be added
here once those operators exist.
"""
from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: engine helpers

from streamlib import Serde, Serdes, Topology  # noqa: E402
from engine import wordcount_topology  # noqa: E402

#: ``(key, value, timestamp)`` tuples, serialized with the topic's serdes.
Records = list[tuple]


@dataclass(frozen=True)
class InputTopic:
    partitions: int
    records: Records
    key_serde: Serde = field(default_factory=Serdes.string)
    value_serde: Serde = field(default_factory=Serdes.string)


@dataclass(frozen=True)
class FaultTopology:
    """One topology under fault injection.

    ``build`` must be a module-level function (Spark workers import it by name).
    ``outputs`` maps each output topic to its (key, value) serdes. With
    ``increasing_outputs`` every key's output values must strictly increase (a count:
    a re-emitted or lost update shows up as a repeat or a gap in the sequence's end).
    """

    name: str
    build: Callable[[], Topology]
    inputs: Callable[[int], dict[str, InputTopic]]
    outputs: dict[str, tuple[Serde, Serde]]
    stores: tuple[str, ...]
    config: dict = field(default_factory=dict)
    increasing_outputs: bool = False


REGISTRY: dict[str, FaultTopology] = {}


def register(topology: FaultTopology) -> FaultTopology:
    REGISTRY[topology.name] = topology
    return topology


WORDS = [f"w{i:03d}" for i in range(300)]


def count_inputs(seed: int, lines: int = 400) -> dict[str, InputTopic]:
    rng = random.Random(seed)
    text = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) for _ in range(lines)]
    return {"lines": InputTopic(2, [(None, line, 1_000 + i) for i, line in enumerate(text)])}


register(FaultTopology(
    name="counts",
    build=wordcount_topology,
    inputs=count_inputs,
    outputs={"counts-out": (Serdes.string(), Serdes.long())},
    stores=("counts",),
    config={"max_records_per_batch": 100},
    increasing_outputs=True,
))
