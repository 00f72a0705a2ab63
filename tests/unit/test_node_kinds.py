"""Node kinds: a new operator is one spec and one processor (plus its stores); the
cached count's batch path belongs to the count kind alone, never to a windowed count."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamlib import Consumed, Materialized, Produced, StreamsBuilder, TimeWindows, TopologyError
from streamlib.dsl.kstream import KStream
from streamlib.node_kinds import COUNT, WINDOW_AGGREGATE, NodeKind, node_kind
from streamlib.node_params import AggregateOp, SourceParams
from streamlib.processors import Processor, Record, processes
from streamlib.runtime.task import Task
from streamlib.spark.lowerings import BATCH_LOWERINGS, stage_batch_input
from streamlib.spark.preaggregate import PreAggregate
from streamlib.state import open_task_stores
from streamlib.topology import Node, StoreDef, Topology

from streams_helpers import S, config, driver_for, kvt

# -- a node kind defined here, and nowhere in streamlib --------------------------------------
#: forwards each key's first record only, remembering seen keys in its key-value store
@dataclass(frozen=True)
class FirstPerKeyParams:
    store: str


FIRST_PER_KEY = NodeKind("test_first_per_key", stores=("kv",), params=FirstPerKeyParams)


@processes(FIRST_PER_KEY)
class FirstPerKeyProcessor(Processor):
    def init(self) -> None:
        self.seen = self.context.store(self.node.params.store)

    def process(self, record: Record) -> None:
        if self.seen.get(record.key) is None:
            self.seen.put(record.key, record.value, record.timestamp)
            self.forward(record)


def first_per_key(stream: KStream, store: str) -> KStream:
    """What a DSL method for the new operator would do: one node of the new kind."""
    graph = stream._graph
    graph.add_store(StoreDef(store, "kv", S, S), user_named=True, step="TEST-FIRST")
    node = graph.add("TEST-FIRST", FIRST_PER_KEY, [stream.node_name], stores=(store,), store=store)
    return KStream(graph, node, stream.key_serde, stream.value_serde)


def test_a_new_node_kind_needs_only_its_spec_and_processor():
    builder = StreamsBuilder()
    stream = builder.stream("in", consumed=Consumed.with_(S, S))
    first_per_key(stream, "seen").map_values(str.upper).to("out", produced=Produced.with_(S, S))
    topology = builder.build()
    assert "Processor: TEST-FIRST-0000000001 (stores: [seen])" in topology.describe()
    with driver_for(topology) as driver:
        inp = driver.create_input_topic("in", S, S)
        for key, value, ts in [("a", "x", 1), ("b", "y", 2), ("a", "z", 3), ("b", "w", 4), ("c", "v", 5)]:
            inp.pipe_input(key, value, timestamp=ts)
        assert kvt(driver.create_output_topic("out", S, S).read_records_to_list()) == [
            ("a", "X", 1), ("b", "Y", 2), ("c", "V", 5)]
        assert dict(driver.get_key_value_store("seen").all()) == {"a": "x", "b": "y", "c": "v"}


def test_a_node_kind_owns_the_kinds_of_store_it_uses():
    nodes = {"src": Node("src", "source", [], SourceParams(topics=["in"])),
             "first": Node("first", FIRST_PER_KEY.name, ["src"], FirstPerKeyParams(store="w"), ("w",))}
    with pytest.raises(TopologyError, match="first: a test_first_per_key step uses stores of kinds "
                                            r"\['kv'\], not the window store 'w'"):
        Topology(nodes, {"w": StoreDef("w", kind="window", window_size_ms=10)})


def test_an_unknown_node_kind_is_a_topology_error():
    with pytest.raises(TopologyError, match="x: unknown node kind 'no_such_kind'"):
        Topology({"x": Node("x", "no_such_kind", [])}, {})


def test_a_kind_name_is_defined_once():
    # the same spec again: fine
    assert NodeKind("test_first_per_key", stores=("kv",), params=FirstPerKeyParams) == FIRST_PER_KEY
    with pytest.raises(ValueError, match="already defined differently"):
        NodeKind("test_first_per_key", time_aware=True)
    with pytest.raises(ValueError, match="already runs as FirstPerKeyProcessor"):
        processes(FIRST_PER_KEY)(type("Other", (Processor,), {}))
    assert node_kind("test_first_per_key") is FIRST_PER_KEY


# -- the cached count's batch lowering -----------------------------------------------------
def rekeyed_count(windowed: bool) -> Topology:
    """Values become keys (so the count reads a repartition), then a count per key, or
    per key and 1-second window."""
    builder = StreamsBuilder()
    grouped = (builder.stream("events", consumed=Consumed.with_(S, S))
               .select_key(lambda key, value: value).group_by_key())
    if windowed:
        grouped = grouped.windowed_by(TimeWindows.of(1000))
    grouped.count(materialized=Materialized.as_("counts")).to_stream().to("out")
    return builder.build()


def counting_stage(topology: Topology):
    return next(sub for sub in topology.subtopologies if sub.repartition_inputs)


def test_the_count_lowering_is_the_count_kinds_own():
    assert set(BATCH_LOWERINGS) == {COUNT}
    topology = rekeyed_count(windowed=False)
    sub = counting_stage(topology)
    source, step = topology.batch_reader(sub)
    assert step.spec is COUNT
    lowering = stage_batch_input(topology, sub, config())
    assert lowering == PreAggregate(source.params.topics[0])
    # not when the count is uncached: every record then changes the output
    assert stage_batch_input(topology, sub, config(cache_max_bytes=0)) is None


def test_a_windowed_count_never_takes_the_cached_count_lowering():
    topology = rekeyed_count(windowed=True)
    sub = counting_stage(topology)
    source, step = topology.batch_reader(sub)  # shaped like the count's input...
    assert step.spec is WINDOW_AGGREGATE and step.params.op is AggregateOp.COUNT
    for cache in (10_000_000, 0):  # ...but a window aggregate has no batch lowering
        assert stage_batch_input(topology, sub, config(cache_max_bytes=cache)) is None


@pytest.mark.parametrize("windowed", [False, True], ids=["count", "windowed-count"])
def test_each_count_takes_a_batch_its_own_way(windowed, tmp_path):
    """A task (under the driver as under Spark) hands a batch to a processor at once only
    through that processor's own ``process_batch``: the cached count's, or the cached
    windowed count's (which assigns windows; it never sees the count's pre-aggregated rows)."""
    from streamlib.processors.aggregate import StreamCountProcessor

    topology = rekeyed_count(windowed)
    sub = counting_stage(topology)
    task = Task(topology, sub, 0, config())
    stores = open_task_stores(str(tmp_path), task.store_specs())
    try:
        task.begin(stores, 0)
        source, step = topology.batch_reader(sub)
        counting = task.processors[step.name]
        assert type(counting).__name__ == ("TimeWindowAggregateProcessor" if windowed
                                           else "StreamCountProcessor")
        assert counting.takes_batches(task.processors[source.name].key_serde)
        own = type(counting).process_batch is StreamCountProcessor.process_batch
        assert own is not windowed
    finally:
        stores.close()


def test_specs_and_topologies_pickle_plainly():
    """Nodes keep their kind's name: a topology shipped to Spark workers (cloudpickled,
    as Spark does) finds the same specs there; a spec itself pickles by value."""
    import pickle

    from pyspark import cloudpickle
    topology = pickle.loads(cloudpickle.dumps(rekeyed_count(windowed=False)))
    assert {node.spec for node in topology} >= {COUNT, node_kind("source"), node_kind("repartition")}
    assert pickle.loads(pickle.dumps(COUNT)) == COUNT
