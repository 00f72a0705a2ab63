"""Source rows that Column steps cannot decode go to the deserialization handler.

Column steps decode ``string()`` keys and values in the JVM, where a binary-to-string
cast accepts any bytes: invalid UTF-8 would flow on as garbage words. So the rows of
a source with Column steps are split in the JVM with ``is_valid_utf8``: the valid ones
run the chain, the others run, in Python, through the source's own
``SourceProcessor`` and so through ``deserialization_exception_handler`` exactly like
the records of a source without Column steps (``fail`` raises
``DeserializationFailure``; ``log_and_continue`` counts ``skipped_records``;
``dead_letter`` appends the original bytes to the DLQ, idempotently per batch).
"""
from __future__ import annotations

from functools import reduce
from typing import Callable, Iterator, Optional

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streamlib.config import StreamsConfig
from streamlib.processors.base import ProcessorContext
from streamlib.processors.io import SourceProcessor
from streamlib.processors.columnar import output_rows
from streamlib.spark.daemon import forget_source_zips
from streamlib.spark.sink import QUERY_ID_PROPERTY
from streamlib.spark.source import BackendSpec
from streamlib.spark.tasks import output_table, write_sinks
from streamlib.topology import Node


def decodable(node: Node, config: StreamsConfig) -> Optional[Column]:
    """A condition true for the source rows whose ``string()`` keys and values are valid
    UTF-8 (null is valid), or ``None`` if the source decodes nothing as a string."""
    checks = []
    for column, serde in (("key", node.params.get("key_serde") or config.default_key_serde),
                          ("value", node.params.get("value_serde") or config.default_value_serde)):
        if serde.name == "string()":
            checks.append(F.col(column).isNull() | F.is_valid_utf8(F.col(column).cast("string")))
    return reduce(lambda a, b: a & b, checks) if checks else None


def split_undecodable(rows: DataFrame, node: Node, config: StreamsConfig) -> tuple[DataFrame, Optional[DataFrame]]:
    """``(rows the Column steps can decode, the others or None)``."""
    ok = decodable(node, config)
    if ok is None:
        return rows, None
    return rows.where(ok), rows.where(~ok)


def handle_undecodable(node: Node, config: StreamsConfig, backend: BackendSpec, batch_id: int,
                       report: Callable[[dict], None]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function that hands undecodable rows to the handler; it
    returns no rows, and reports its counters like a task."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        forget_source_zips()
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
