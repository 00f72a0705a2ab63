"""How a task's input rows encode records, declared by whoever plans the stage.

Spark may hand a task rows that each stand for several records (a pre-aggregation
before the shuffle, :mod:`streamlib.spark.rules`); the stage's plan says so, and the
task dispatches on that declaration, never on the columns it happens to find.
"""
from __future__ import annotations

from enum import Enum


class InputEncoding(Enum):
    """The rows of a task's input."""

    #: one row per record: topic, partition, offset, timestamp, key, value, headers
    RECORDS = "records"
    #: one row per key (and headers) of a repartition, with int64 ``records`` (records
    #: it stands for) and ``weight`` (those with a value): a cached count's input
    #: (:mod:`streamlib.spark.preaggregate`)
    COUNTED = "counted"
    #: rows per key and window of a user topic, pre-aggregated by the source's reader
    #: (:mod:`streamlib.spark.window_counts`), beside raw records (their window columns
    #: null) that never reach the count: a cached windowed count's input
    WINDOW_COUNTS = "window counts"
    #: one row per record, as :attr:`RECORDS`, for a stage whose cached windowed ``reduce``
    #: or ``aggregate`` folds a batch's records per window at once where it can
    #: (:mod:`streamlib.spark.rules.window_folds`)
    WINDOW_FOLDS = "records, folded per window"
