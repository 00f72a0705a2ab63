"""streamlib: Kafka Streams-style stream processing for Python, on Apache Spark."""
from __future__ import annotations

from typing import Any

from .config import StreamsConfig
from .dsl import (BranchedKStream, Consumed, GlobalKTable, Grouped, Joined, KGroupedStream, KGroupedTable, KStream,
                  KTable, Materialized, Produced, Repartitioned, StreamsBuilder, Suppressed)
from .processor_api import (FixedKeyProcessor, FixedKeyRecord, Processor, ProcessorSupplier, PunctuationType,
                            Record)
from .serdes import Serde, Serdes
from .stores import Stores
from .testing import TestRecord, TopologyTestDriver
from .topology import Topology, TopologyError
from .windows import (EmitStrategy, JoinWindows, SessionWindows, SlidingWindows, TimeWindows, Window,
                      Windowed)

__version__ = "0.1.0"

_LAZY = {"Streams": "streamlib.app"}  # imports pyspark: only when used


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'streamlib' has no attribute {name!r}")


__all__ = ["StreamsBuilder", "Topology", "TopologyError", "Streams", "StreamsConfig", "KStream",
           "KTable", "GlobalKTable", "KGroupedStream", "KGroupedTable", "BranchedKStream", "Serde", "Serdes",
           "Consumed", "Produced", "Grouped", "Materialized", "Joined", "Suppressed", "Repartitioned",
           "TopologyTestDriver", "TestRecord", "Window", "Windowed", "TimeWindows", "SlidingWindows",
           "SessionWindows", "JoinWindows", "EmitStrategy", "Processor", "FixedKeyProcessor", "ProcessorSupplier",
           "PunctuationType", "Record", "FixedKeyRecord", "Stores"]
