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
