"""Source rows that Column steps cannot decode go to the deserialization handler, and
so do those whose timestamp is more than ``max_future_skew`` ahead of the wall clock.

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
from streamlib.time import now_millis
from streamlib.topology import Node

#: the error class :func:`streamlib.spark.query_errors.translate` finds in a failed query's text
_FAILURE = f"{DeserializationFailure.__module__}.{DeserializationFailure.__name__}"


def _decodable_columns(node: Node, config: StreamsConfig) -> list[str]:
    """The columns the source decodes as ``string()``, which must be valid UTF-8."""
    return [column for column, serde in (
        ("key", node.params.key_serde),
        ("value", node.params.value_serde))
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


def on_time(config: StreamsConfig) -> Optional[Column]:
    """A condition true for the source rows at most ``max_future_skew`` ahead of the wall
    clock (the query execution's current time: one value for the whole batch's plan),
    or ``None`` without that limit."""
    skew = config.max_future_skew_ms
    if skew is None:
        return None
    return once(("on time", skew), lambda: F.coalesce(
        F.col("timestamp") <= F.unix_millis(F.current_timestamp()) + F.lit(skew), F.lit(True)))


def _future_message(node: str, skew: int) -> Column:
    return F.concat(F.lit(f"\n{_FAILURE}: refusing the record at topic '"), F.col("topic"),
                    F.lit("' partition "), F.col("partition").cast("string"),
                    F.lit(" offset "), F.col("offset").cast("string"), F.lit(f" in {node}: its timestamp "),
                    F.col("timestamp").cast("string"),
                    F.lit(f" is more than max_future_skew ({skew} ms) ahead of the wall clock ("),
                    F.unix_millis(F.current_timestamp()).cast("string"),
                    F.lit(") (deserialization_exception_handler='fail')\n"))


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
        metrics: dict = {}
        for count, first, reason, detail in (
                ("skipped", "first", "deserialization_error", "skipped: not valid UTF-8 for string()"),
                ("future", "first_future", "future_timestamp", "skipped: more than max_future_skew ahead "
                                                              "of the wall clock")):
            if found.get(count):
                at = found[first]
                count_drop(metrics, self.node, reason, Where(at["topic"], at["partition"], at["offset"]),
                           found[count], detail)
        if metrics:
            report({"tasks": {f"{self.node}-undecodable": metrics}})


def split_undecodable(rows: DataFrame, node: Node, config: StreamsConfig
                      ) -> tuple[DataFrame, Optional[DataFrame], Optional[SkippedCount]]:
    """``(rows for the Column steps, rows for the Python handler or None, the count of
    dropped rows to report or None)``, by the source's handler."""
    decodes, timely = decodable(node, config), on_time(config)
    if decodes is None and timely is None:
        return rows, None, None
    handler = config.deserialization_exception_handler
    skew = config.max_future_skew_ms
    key = (handler, node.name, tuple(_decodable_columns(node, config)), skew)
    ok = decodes if timely is None else timely if decodes is None else once(key + ("ok",), lambda: decodes & timely)
    if handler == "fail":
        def message() -> Column:
            if timely is None:
                return failure_message(node, config)
            future = _future_message(node.name, skew)
            return future if decodes is None else F.when(decodes, future).otherwise(failure_message(node, config))
        guard = once(key, lambda: F.when(ok, F.lit(True)).otherwise(F.raise_error(message())))
        return rows.where(guard), None, None
    if handler == "log_and_continue" and internals.can_read_observed_metrics(rows.sparkSession):
        skipped = SkippedCount(node.name, f"streamlib_skipped_{node.name}")
        where = F.struct("topic", "partition", "offset")
        counts = []
        if decodes is not None:
            counts += [once(key + ("count",), lambda: F.count_if(~decodes).alias("skipped")),
                       once(key + ("first",), lambda: F.min(F.when(~decodes, where)).alias("first"))]
        if timely is not None:   # the decodable rows too far ahead
            late = ~timely if decodes is None else decodes & ~timely
            counts += [once(key + ("future",), lambda: F.count_if(late).alias("future")),
                       once(key + ("first future",), lambda: F.min(F.when(late, where)).alias("first_future"))]
        return rows.observe(skipped.metric, *counts).where(ok), None, skipped
    # dead_letter, or log_and_continue where Spark's observed metrics cannot be read: the
    # bad rows go through the source's handler in Python, which counts and logs them; they
    # carry the wall clock their split used, so the handler judges their timestamps alike.
    bad = rows.where(once(key, lambda: ~ok))
    if timely is not None:
        bad = bad.withColumn("wall_clock", F.unix_millis(F.current_timestamp()))
    return rows.where(ok), bad, None


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
                context.wall_clock_time = row.get("wall_clock") or now_millis()
                source.receive(row["topic"], row["partition"], row["offset"], row["timestamp"], row["key"],
                               row["value"], tuple((h["key"], h["value"]) for h in row["headers"] or ()))
        if context.output:  # dead letters
            producer = f"{config.application_id}/{spark_task.getLocalProperty(QUERY_ID_PROPERTY)}/{context.task_id}"
            write_sinks(log, output_table(output_rows(context.output), partition, frozenset()), producer, batch_id)
        report({"tasks": {context.task_id: dict(context.metrics)}})
        yield from ()

    return run
