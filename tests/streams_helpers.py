"""Small helpers shared by the operator tests (TopologyTestDriver based)."""
from __future__ import annotations

from contextlib import contextmanager

from streamlib import Serdes, StreamsConfig, TopologyTestDriver

S = Serdes.string()
I = Serdes.integer()
L = Serdes.long()
APP = "test-app"


def config(**overrides) -> StreamsConfig:
    return StreamsConfig(application_id=APP, **overrides)


@contextmanager
def driver_for(builder_or_topology, **config_overrides):
    topology = builder_or_topology.build() if hasattr(builder_or_topology, "build") else builder_or_topology
    driver = TopologyTestDriver(topology, config(**config_overrides))
    try:
        yield driver
    finally:
        driver.close()


def kvt(records) -> list[tuple]:
    """(key, value, timestamp) of output records."""
    return [(r.key, r.value, r.timestamp) for r in records]


def run_cached_batch(topology, records, tmp_path, **config_overrides):
    """Run ``records`` (topic, key bytes, value bytes, timestamp) through the first
    sub-topology as ONE batch of a caching task (the Spark path's commit semantics);
    return the emitted rows (topic, timestamp, key bytes, value bytes)."""
    from streamlib.runtime.task import Task
    from streamlib.state import open_task_stores
    cfg = config(state_dir=str(tmp_path), **config_overrides)
    assert cfg.caching
    task = Task(topology, topology.subtopologies[0], 0, cfg)
    stores = open_task_stores(str(tmp_path / "task"), task.store_specs())
    try:
        task.begin(stores, 1)
        for offset, (topic, key, value, ts) in enumerate(records):
            task.process(topic, 0, offset, ts, key, value)
        task.commit()
        return [(t, ts, k, v) for t, _, ts, k, v, _ in task.take_output()]
    finally:
        stores.close()
