"""A micro-batch's plan built once and reused: only its source rows change.

Building a batch's DataFrame costs a Py4J round trip and an eager analysis per
transformation, 2-4 ms each in Spark Classic: 30-50 ms a batch for a plan of a dozen
steps, while the executors wait. Yet every batch's plan is the same but for its
source: ``foreachBatch`` hands over each batch as one ``LogicalRDD`` leaf with the
same output attributes (the streaming plan's), only another RDD. So the first batch's
analyzed plan serves as a template: later batches put their own leaf where the
first one's was (one ``transformUp`` in the JVM) and skip the rest.

A template is taken only from a plan whose leaves are that source or batch-independent
(Spark ``Range`` relations, the ticks); the caller does not take one from a plan with
per-batch parts (a dead-letter handler bound to its batch id, cached stage outputs). A
batch whose source has other output attributes, or comes from another Java session,
gets a plan built afresh.
"""
from __future__ import annotations

from typing import Any, Optional

from pyspark.sql import DataFrame

#: Leaves that stay the same in every batch's plan (the ticks are a ``range``).
_STATIC_LEAVES = frozenset({"org.apache.spark.sql.catalyst.plans.logical.Range"})


class PlanTemplate:
    """A batch's analyzed plan, to be re-instantiated over later batches' source rows.

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

    def __init__(self, plan: Any, leaf: Any, session: Any, jvm: Any):
        self._plan = plan
        self._leaf = leaf
        self._output = leaf.output()
        self._session = session
        # looked up once: each package step of a JVM name is a round trip
        self._utils = jvm.org.apache.spark.api.python.PythonUtils
        self._dataset = jvm.org.apache.spark.sql.classic.Dataset

    @classmethod
    def capture(cls, result: DataFrame, source: DataFrame) -> Optional[PlanTemplate]:
        """The template of ``result``, built over ``source``; None if its plan has leaves
        that are neither ``source`` nor batch-independent."""
        plan = result._jdf.queryExecution().analyzed()
        leaf = source._jdf.queryExecution().analyzed()
        leaves = plan.collectLeaves()
        for i in range(leaves.size()):
            found = leaves.apply(i)
            if not (found.equals(leaf) or found.getClass().getName() in _STATIC_LEAVES):
                return None
        if leaf.collectLeaves().size() != 1:
            return None
        return cls(plan, leaf, source.sparkSession._jsparkSession, source.sparkSession._jvm)

    def instantiate(self, source: DataFrame) -> Optional[DataFrame]:
        """The template's plan over ``source``, or None if ``source`` does not fit it."""
        session = source.sparkSession
        leaf = source._jdf.queryExecution().analyzed()
        if not (session._jsparkSession.equals(self._session) and leaf.output().equals(self._output)):
            return None
        # A Scala Map is a PartialFunction: the one rule transformUp applies.
        plan = self._plan.transformUp(self._utils.toScalaMap({self._leaf: leaf}))
        # Its nodes are the analyzed template's: the analyzer need not resolve them again.
        plan.setAnalyzed()
        return DataFrame(self._dataset.ofRows(session._jsparkSession, plan), session)
