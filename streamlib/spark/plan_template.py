"""A micro-batch's plan built once and reused: only its source rows change.

Building a batch's DataFrame costs a Py4J round trip and an eager analysis per
transformation, 2-4 ms each in Spark Classic: 30-50 ms a batch for a plan of a dozen
steps, while the executors wait. Yet every batch's plan is the same but for its
source: ``foreachBatch`` hands over each batch as one leaf over the batch's RDD, with the
same output attributes (the streaming plan's), only another RDD. So the first batch's
analyzed plan serves as a template: later batches put their own leaf where the
first one's was (one plan rewrite in the JVM, through :mod:`streamlib.spark.internals`)
and skip the rest.

A template is taken only from a plan whose leaves are that source or batch-independent
(Spark ``Range`` relations, the ticks); the caller does not take one from a plan with
per-batch parts (a dead-letter handler bound to its batch id, cached stage outputs). A
batch whose source has other output attributes, or comes from another Java session,
gets a plan built afresh.
"""
from __future__ import annotations

from typing import Optional

from pyspark.sql import DataFrame

from streamlib.spark import internals

#: Leaves that stay the same in every batch's plan (the ticks are a ``range``).
_STATIC_LEAVES = frozenset({"org.apache.spark.sql.catalyst.plans.logical.Range"})


class PlanTemplate:
    """A batch's analyzed plan, to be re-instantiated over later batches' source rows.

    Catalyst's plans are Spark internals (:mod:`streamlib.spark.internals`): without
    them no template is taken, and every batch is planned afresh.

    Examples
    --------
    >>> from pyspark.sql import SparkSession, functions as F
    >>> spark = SparkSession.builder.getOrCreate()
    >>> first = spark.range(3).select((F.col("id") * 2).alias("id"))
    >>> template = PlanTemplate.capture(first.where("id > 0"), first)
    >>> later = spark.range(3).select((F.col("id") * 2).alias("id"))
    >>> template.instantiate(later) is None    # other output attributes: build afresh
    True
    """

    def __init__(self, captured: internals.CapturedPlan):
        self._captured = captured

    @classmethod
    def capture(cls, result: DataFrame, source: DataFrame) -> Optional[PlanTemplate]:
        """The template of ``result``, built over ``source``; None if its plan has leaves
        that are neither ``source`` nor batch-independent."""
        captured = internals.capture_plan(result, source, _STATIC_LEAVES)
        return None if captured is None else cls(captured)

    def instantiate(self, source: DataFrame) -> Optional[DataFrame]:
        """The template's plan over ``source``, or None if ``source`` does not fit it."""
        return internals.instantiate_plan(self._captured, source)
