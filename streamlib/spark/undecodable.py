"""Source rows that Column steps cannot decode go to the deserialization handler.

Column steps decode ``string()`` keys and values in the JVM, where a binary-to-string
cast accepts any bytes: invalid UTF-8 would flow on as garbage words. So the rows of
a source with Column steps are checked in the JVM with ``is_valid_utf8``, in the same
scan that feeds the chain (a second branch would read the source twice):

- ``fail``: the first bad row raises ``DeserializationFailure`` from the JVM
  (``raise_error``), naming node, topic, partition and offset, as the Python path does;
- ``log_and_continue``: bad rows are dropped; an observed metric counts them, and the
  driver counts them as drops (reason ``deserialization_error``) and logs the first
  one's position;
- ``dead_letter``: bad rows run, in one Python task, through the source's own
  ``SourceProcessor`` and so through the handler exactly like the records of a source
  without Column steps (the original bytes go to the DLQ, idempotently per batch).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Callable, Iterator, Optional

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streamlib.config import StreamsConfig
from streamlib.processors.base import ProcessorContext
from streamlib.processors.drops import Where, count_drop
from streamlib.processors.io import DeserializationFailure, SourceProcessor
from streamlib.processors.columnar import output_rows
from streamlib.spark.daemon import start_worker_task
from streamlib.spark import internals
from streamlib.spark.exprs import once
from streamlib.spark.sink import QUERY_ID_PROPERTY
from streamlib.topics.spec import BackendSpec
from streamlib.spark.tasks import output_table, write_sinks
from streamlib.topology import Node

#: the error class :func:`streamlib.spark.query_errors.translate` finds in a failed query's text
_FAILURE = f"{DeserializationFailure.__module__}.{DeserializationFailure.__name__}"


def _decodable_columns(node: Node, config: StreamsConfig) -> list[str]:
    """The columns the source decodes as ``string()``, which must be valid UTF-8."""
    return [column for column, serde in (
        ("key", node.params.get("key_serde") or config.default_key_serde),
        ("value", node.params.get("value_serde") or config.default_value_serde))
        if serde.name == "string()"]


def _valid(column: str) -> Column:
    return F.col(column).isNull() | F.is_valid_utf8(F.col(column).cast("string"))


def decodable(node: Node, config: StreamsConfig) -> Optional[Column]:
    """A condition true for the source rows whose ``string()`` keys and values are valid
    UTF-8 (null is valid), or ``None`` if the source decodes nothing as a string."""
    columns = tuple(_decodable_columns(node, config))
    if not columns:
        return None
    return once(("decodable", columns), lambda: reduce(lambda a, b: a & b, [_valid(c) for c in columns]))


def failure_message(node: Node, config: StreamsConfig) -> Column:
    """The ``fail`` handler's error for a bad row, worded like the Python path's."""
    columns = tuple(_decodable_columns(node, config))
    return once(("failure message", node.name, columns), lambda: _failure_message(node.name, columns))


def _failure_message(node: str, columns: tuple[str, ...]) -> Column:
    which = F.lit("the value")
    if "key" in columns:
        which = F.when(~_valid("key"), F.lit("the key")).otherwise(which)
    # On a line of its own, so translate() finds the class name at a line start.
    return F.concat(F.lit(f"\n{_FAILURE}: cannot deserialize the record at topic '"), F.col("topic"),
                    F.lit("' partition "), F.col("partition").cast("string"),
                    F.lit(" offset "), F.col("offset").cast("string"), F.lit(f" in {node}: "), which,
                    F.lit(" is not valid UTF-8 for string() (deserialization_exception_handler='fail')\n"))


@dataclass(frozen=True)
class SkippedCount:
    """Names the observed metric that counts a source's dropped rows in one batch."""

    node: str
    metric: str

    def report(self, observed: Optional[dict[str, dict]], report: Callable[[dict], None]) -> None:
        """Add the batch's count (``observed``: the query execution's observed metrics
        by name, :func:`streamlib.spark.internals.observed_metrics`) to
        ``skipped_records`` and ``dropped_records``, and log where the first bad row was."""
        found = (observed or {}).get(self.metric)
        if found is None:   # the branch was pruned (a pass without records)
            return
        skipped = found["skipped"]
        if not skipped:
            return
        first = found["first"]
        metrics: dict = {}
        count_drop(metrics, self.node, "deserialization_error",
                   Where(first["topic"], first["partition"], first["offset"]), skipped,
                   "skipped: not valid UTF-8 for string()")
        report({"tasks": {f"{self.node}-undecodable": metrics}})


def split_undecodable(rows: DataFrame, node: Node, config: StreamsConfig
                      ) -> tuple[DataFrame, Optional[DataFrame], Optional[SkippedCount]]:
    """``(rows for the Column steps, rows for the Python handler or None, the count of
    dropped rows to report or None)``, by the source's handler."""
    ok = decodable(node, config)
    if ok is None:
        return rows, None, None
    handler = config.deserialization_exception_handler
    key = (handler, node.name, tuple(_decodable_columns(node, config)))
    if handler == "fail":
        guard = once(key, lambda: F.when(ok, F.lit(True)).otherwise(F.raise_error(failure_message(node, config))))
        return rows.where(guard), None, None
    if handler == "log_and_continue" and internals.can_read_observed_metrics(rows.sparkSession):
        skipped = SkippedCount(node.name, f"streamlib_skipped_{node.name}")
        count = once(key + ("count",), lambda: F.count_if(~ok).alias("skipped"))
        first = once(key + ("first",), lambda: F.min(F.when(~ok, F.struct("topic", "partition", "offset")))
                     .alias("first"))
        return rows.observe(skipped.metric, count, first).where(ok), None, skipped
    # dead_letter, or log_and_continue where Spark's observed metrics cannot be read: the
    # bad rows go through the source's handler in Python, which counts and logs them.
    return rows.where(ok), rows.where(once(key, lambda: ~ok)), None


def handle_undecodable(node: Node, config: StreamsConfig, backend: BackendSpec, batch_id: int,
                       report: Callable[[dict], None]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function that hands undecodable rows to the handler; it
    returns no rows, and reports its counters like a task."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        start_worker_task()
        rows = [b for b in batches if b.num_rows]
        if not rows:
            return
        spark_task = TaskContext.get()
        partition = spark_task.partitionId()
        log = backend.open()
        context = ProcessorContext(f"{node.name}-undecodable-{partition}", partition, config, log.num_partitions)
        source = SourceProcessor(node, context)
        source.init()
        for batch in rows:
            for row in batch.to_pylist():
                source.receive(row["topic"], row["partition"], row["offset"], row["timestamp"], row["key"],
                               row["value"], tuple((h["key"], h["value"]) for h in row["headers"] or ()))
        if context.output:  # dead letters
            producer = f"{config.application_id}/{spark_task.getLocalProperty(QUERY_ID_PROPERTY)}/{context.task_id}"
            write_sinks(log, output_table(output_rows(context.output), partition, frozenset()), producer, batch_id)
        report({"tasks": {context.task_id: dict(context.metrics)}})
        yield from ()

    return run
