"""Spark micro-batch ids and the internal batch ids stores and changelogs see.

A micro-batch may run twice over the tasks: once with its records, once without, to
advance every time-aware task to the application's stream time (``Streams``). Each
pass is a batch of its own for the stores' replay protection and the sinks'
idempotent appends, so Spark's batch ``b`` becomes internal batches ``2b`` and
``2b + 1``: still increasing, and a re-run of ``b`` re-runs both.
"""
from __future__ import annotations


def data_pass(spark_batch: int) -> int:
    """The internal batch of micro-batch ``spark_batch``'s records."""
    return 2 * spark_batch


def time_pass(spark_batch: int) -> int:
    """The internal batch of its pass without records (the last of the micro-batch)."""
    return 2 * spark_batch + 1


def is_data_pass(internal_batch: int) -> bool:
    """Whether an internal batch is a micro-batch's pass with its records.

    >>> is_data_pass(data_pass(3)), is_data_pass(time_pass(3))
    (True, False)
    """
    return internal_batch % 2 == 0
