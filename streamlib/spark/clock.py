"""Micro-batches without input, so that wall-clock punctuators fire while no record comes.

Spark runs a micro-batch only when a source has new offsets. An application with user
processors (whose wall-clock punctuators must fire on time, input or not) also reads
``format("streamlib-clock")``: a source without rows whose offset is the wall clock in
``intervalMs`` steps, so a running application gets a batch at least every interval.
The batch runs every time-aware task (the lowering's ticks, spark/lower.py), and each fires its
wall-clock timers at the batch's end. ``process_available()`` reads it frozen (no
``intervalMs``, offset 0): there a batch comes only with input, and the query's sources
stay the same whichever way the application last ran.
"""
from __future__ import annotations

from typing import Any, Iterator

from pyspark.sql.datasource import DataSource, DataSourceStreamReader

from streamlib.spark.arrow import SOURCE_DDL
from streamlib.time import now_millis
from streamlib.topology import Topology


def needs_clock(topology: Topology) -> bool:
    """Whether some node may have wall-clock punctuators: a user processor."""
    return any(node.spec.task_state for node in topology)


def with_clock(stream: Any, interval_ms: int) -> Any:
    """``stream`` (a streaming DataFrame of source rows) with the clock beside it; with
    ``interval_ms`` 0 the clock never moves."""
    clock = stream.sparkSession.readStream.format(ClockDataSource.name())
    if interval_ms:
        clock = clock.option("intervalMs", str(interval_ms))
    return stream.unionByName(clock.load(), allowMissingColumns=True)


class ClockDataSource(DataSource):
    """``format("streamlib-clock")``: no rows, an offset that follows the wall clock."""

    @classmethod
    def name(cls) -> str:
        return "streamlib-clock"

    def schema(self) -> str:
        return SOURCE_DDL

    def streamReader(self, schema: Any) -> "ClockStreamReader":
        return ClockStreamReader(int(self.options.get("intervalMs") or 0))


class ClockStreamReader(DataSourceStreamReader):
    """Offsets ``{"tick": now // interval}`` (``{"tick": 0}`` when frozen); reads nothing."""

    def __init__(self, interval_ms: int):
        self.interval_ms = interval_ms

    def initialOffset(self) -> dict:
        return {"tick": 0}

    def latestOffset(self) -> dict:
        return {"tick": now_millis() // self.interval_ms if self.interval_ms else 0}

    def partitions(self, start: dict, end: dict) -> list:
        return []

    def read(self, partition: Any) -> Iterator[tuple]:
        return iter(())
