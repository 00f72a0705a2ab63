"""Helpers for tests that run topologies through Spark on a fresh local log."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

from streamlib import (Consumed, Materialized, Produced, Serdes, Streams, StreamsBuilder,
                       StreamsConfig)
from streamlib.topics import open_backend

WORD = re.compile(r"\W+")


def words_of(line: str) -> list[str]:
    return [w for w in WORD.split(line.lower()) if w]


def wordcount_topology(store: str = "counts", source: str = "lines", output: str = "counts-out"):
    builder = StreamsBuilder()
    (builder.stream(source, consumed=Consumed.with_(Serdes.string(), Serdes.string()))
     .flat_map_values(words_of)
     .group_by(lambda key, word: word)
     .count(materialized=Materialized.as_(store))
     .to_stream().to(output, produced=Produced.with_(Serdes.string(), Serdes.long())))
    return builder.build()


def python_count(lines: list[str]) -> Counter:
    return Counter(w for line in lines for w in words_of(line))


class Workspace:
    """A local log, a state dir and a config factory under one temporary directory."""

    def __init__(self, root: Path):
        self.root = root
        self.bootstrap = f"local://{root / 'log'}"
        self.backend = open_backend(self.bootstrap)
        self.state_dir = str(root / "state")

    def config(self, **overrides) -> StreamsConfig:
        base = StreamsConfig(application_id="app", bootstrap=self.bootstrap, state_dir=self.state_dir)
        return replace(base, **overrides)

    def produce(self, topic: str, records, partitions: int = 1, key_serde=Serdes.string(),
                value_serde=Serdes.string()) -> None:
        """``records``: iterable of (key, value[, timestamp]), strings unless serdes say otherwise."""
        self.backend.create_topic(topic, partitions=partitions, exist_ok=True)
        for record in records:
            key, value, *ts = record
            self.backend.produce(topic, key=key_serde.serialize(key), value=value_serde.serialize(value),
                                 timestamp=ts[0] if ts else None)
        self.backend.flush()

    def read(self, topic: str, key_serde=Serdes.string(), value_serde=Serdes.string(),
             with_partition: bool = False) -> list:
        """Every record of ``topic`` as (key, value, timestamp[, partition]), partition by partition."""
        out = []
        for partition, end in sorted(self.backend.end_offsets(topic).items()):
            for r in self.backend.read(topic, partition, 0, end):
                row = (key_serde.deserialize(r.key), value_serde.deserialize(r.value), r.timestamp)
                out.append(row + (partition,) if with_partition else row)
        return out

    def run(self, spark, topology, **overrides) -> Streams:
        app = Streams(topology, self.config(**overrides), spark=spark)
        app.process_available()
        return app


def latest_per_key(records) -> dict:
    latest = {}
    for key, value, _ in records:
        latest[key] = value
    return latest
