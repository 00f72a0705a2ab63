"""Write-once tests: run one topology under the ``TopologyTestDriver`` and through
Spark on the embedded local log, and collect what each engine left behind (store
contents, records per output topic, metrics) in the same shape, so a test states
its inputs once and asserts that the engines agree."""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from streamlib import Serde, Serdes, StreamsConfig, Topology, TopologyTestDriver
from streamlib.topics.partitioner import default_partitioner
from engine import Workspace

STRING = Serdes.string()


@dataclass(frozen=True)
class Input:
    """Records for one input topic: (key, value, timestamp) in produce order."""

    topic: str
    records: list[tuple]
    partitions: int = 1
    key_serde: Serde = STRING
    value_serde: Serde = STRING


@dataclass
class Outcome:
    """What one engine produced: ``stores[name] = {key: value}``, ``outputs[topic] =
    [(key, value, timestamp, partition)]`` (per partition in offset order), metrics."""

    stores: dict[str, dict]
    outputs: dict[str, list[tuple]]
    metrics: dict[str, Any] = field(default_factory=dict)
    #: under Spark: the plan rules that applied (streamlib.spark.rules)
    rules: tuple[str, ...] = ()
    #: under Spark: passes whose stateful stage ran in the source's read task
    #: (rules/small_batch_reader.py)
    reader_passes: int = 0

    def per_key(self, topic: str) -> dict[Any, list[tuple]]:
        """Each key's updates (value, timestamp) in the order they were written."""
        sequences: dict[Any, list[tuple]] = {}
        for key, value, timestamp, _ in self.outputs[topic]:
            sequences.setdefault(key, []).append((value, timestamp))
        return sequences

    def final(self, topic: str) -> dict[Any, Any]:
        """The output topic read as a compacted table: the latest value per key, a
        tombstone removing the key (a key never written and a deleted key look alike).
        Timestamps are left out: with caching, a commit that moves a row back and forth
        emits nothing for the group it left and came back to (Kafka's record cache)."""
        table = {key: updates[-1][0] for key, updates in self.per_key(topic).items()}
        return {key: value for key, value in table.items() if value is not None}


#: output topic -> (key serde, value serde)
Outputs = dict[str, tuple[Serde, Serde]]


def in_time_order(inputs: list[Input]) -> list[tuple[Input, tuple]]:
    """Every input record with its topic, each topic in produce order, the topic whose
    next record has the smallest timestamp first: Kafka Streams' choice among input
    partitions (one record of a key always precedes the key's later records)."""
    tagged = [[(inp, record) for record in inp.records] for inp in inputs]
    return list(heapq.merge(*tagged, key=lambda pair: pair[1][2]))


def kafka_order(rows: list[tuple], partitions: int) -> list[tuple]:
    """``rows`` (key, value, timestamp) as Kafka Streams takes them from a topic of
    ``partitions`` partitions (keys placed by the default partitioner): each partition in
    produce order, the one whose next record is oldest first (by the largest timestamp
    up to it, as ``streamlib.runtime.order``; ties to the lower partition)."""
    by_partition: list[list[tuple]] = [[] for _ in range(partitions)]
    for row in rows:
        by_partition[default_partitioner(row[0].encode(), partitions)].append(row)
    entries = [np.maximum.accumulate([r[2] for r in part]) if part else [] for part in by_partition]
    merged = sorted((int(entries[p][i]), p, i) for p in range(partitions) for i in range(len(by_partition[p])))
    return [by_partition[p][i] for _, p, i in merged]


def run_driver(topology: Topology, inputs: list[Input], outputs: Outputs,
               config: StreamsConfig) -> Outcome:
    """Pipe the inputs through the test driver in the order of :func:`in_time_order`."""
    with TopologyTestDriver(topology, config) as driver:
        topics = {inp.topic: driver.create_input_topic(inp.topic, inp.key_serde, inp.value_serde)
                  for inp in inputs}
        for inp, (key, value, timestamp) in in_time_order(inputs):
            topics[inp.topic].pipe_input(key, value, timestamp)
        views = driver.get_all_state_stores()
        stores = {name: dict(views[name].all()) for name in topology.stores
                  if topology.stores[name].queryable}
        written = {topic: [(r.key, r.value, r.timestamp, 0) for r in
                           driver.create_output_topic(topic, *serdes).read_records_to_list()]
                   for topic, serdes in outputs.items()}
        return Outcome(stores, written, driver.metrics())


def run_spark(spark: Any, workspace: Workspace, topology: Topology, inputs: list[Input],
              outputs: Outputs, **config: Any) -> Outcome:
    """Produce the inputs to the workspace's local log and process them with Spark."""
    for inp in inputs:
        workspace.produce(inp.topic, inp.records, inp.partitions, inp.key_serde, inp.value_serde)
    app = workspace.run(spark, topology, **config)
    try:
        stores = {name: dict(app.store(name).all()) for name in topology.stores
                  if topology.stores[name].queryable}
        written = {topic: workspace.read(topic, *serdes, with_partition=True)
                   for topic, serdes in outputs.items()}
        return Outcome(stores, written, app.metrics(), app._plan.physical.applied, app._plan.passes_in_reader)
    finally:
        app.stop()
        # stop() keeps the query replicas open (queries after a stop) for the process's
        # life: a soak of hundreds of cases in one process ran out of file descriptors.
        # A later run on this workspace opens them again, as a restarted process would.
        if app._queries is not None:
            app._queries.close()
            app._queries = None
        workspace.backend.close()  # the write locks of the input's partitions (reopened on use)


def run_both(spark: Any, root: Path, build: Callable[[], Topology], inputs: list[Input],
             outputs: Outputs, **config: Any) -> tuple[Outcome, Outcome]:
    """The driver's outcome and Spark's for the same topology, inputs and config."""
    workspace = Workspace(root)
    driver = run_driver(build(), inputs, outputs, workspace.config(**config))
    return driver, run_spark(spark, workspace, build(), inputs, outputs, **config)


def assert_engines_agree(driver: Outcome, spark: Outcome, outputs: Optional[Outputs] = None,
                         every_update: bool = False) -> None:
    """Same final stores and same final output tables; with ``every_update`` (no
    caching) also the same sequence of updates per key on every output topic.
    ``outputs`` names the topics to compare (None: all the driver wrote; empty: none)."""
    assert spark.stores.keys() == driver.stores.keys()
    for name, content in driver.stores.items():
        assert spark.stores[name] == content, name
    for topic in driver.outputs if outputs is None else outputs:
        final = spark.final(topic)
        assert final == driver.final(topic), f"{topic}: Spark {final} != driver {driver.final(topic)}"
        if every_update:
            assert spark.per_key(topic) == driver.per_key(topic), topic
