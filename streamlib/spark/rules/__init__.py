"""The rules that rewrite the plain plan (:mod:`streamlib.spark.plan`) for speed.

A rule never changes a result: output topics, stores and ``dropped_records`` with it
equal those of the plain plan and of ``TopologyTestDriver`` (each rule has a property
test saying so, ``tests/spark/rules``). Where it cannot keep per-record semantics
(lateness, order, old values) it does not apply; ``applies`` states those exclusions
once, ``rewrite`` changes the plan there. They run in the order of :data:`RULES`: a
rule may depend on what an earlier one decided, never the other way round.

Examples
--------
>>> [rule.name for rule in RULES]
['columns_only_stage', 'count_preaggregation', 'window_count_preaggregation', 'reader_stage', 'window_folds', \
'small_batch_reader']
>>> [rule.name for rule in rules_except("reader_stage, count_preaggregation")]
['columns_only_stage', 'window_count_preaggregation', 'window_folds', 'small_batch_reader']
>>> rules_except("*")
[]
"""
from __future__ import annotations

from typing import Protocol

from streamlib.spark.plan import PhysicalPlan, PlanContext
from streamlib.spark.rules.columns_only import ColumnsOnlyStage
from streamlib.spark.rules.count_preaggregation import CountPreAggregation
from streamlib.spark.rules.reader_stage import ReaderStage
from streamlib.spark.rules.small_batch_reader import SmallBatchReader
from streamlib.spark.rules.window_counts import WindowCountPreAggregation
from streamlib.spark.rules.window_folds import WindowFolds


class Rule(Protocol):
    """One rewrite of the physical plan."""

    #: its name in ``spark.streamlib.plan.excludedRules``
    name: str

    def applies(self, plan: PhysicalPlan, ctx: PlanContext) -> bool:
        """Whether it changes ``plan`` (somewhere its exclusions allow)."""

    def rewrite(self, plan: PhysicalPlan, ctx: PlanContext) -> PhysicalPlan:
        """``plan`` rewritten wherever the rule applies."""


RULES: tuple[Rule, ...] = (ColumnsOnlyStage(), CountPreAggregation(), WindowCountPreAggregation(),
                           ReaderStage(), WindowFolds(), SmallBatchReader())


def rules_except(excluded: str) -> list[Rule]:
    """:data:`RULES` without those named in ``excluded`` (comma-separated; ``*``: all)."""
    names = {name.strip() for name in (excluded or "").split(",") if name.strip()}
    if "*" in names:
        return []
    unknown = names - {rule.name for rule in RULES}
    if unknown:
        raise ValueError(f"unknown plan rule(s) {sorted(unknown)} in spark.streamlib.plan.excludedRules; "
                         f"the rules are {[rule.name for rule in RULES]}")
    return [rule for rule in RULES if rule.name not in names]
