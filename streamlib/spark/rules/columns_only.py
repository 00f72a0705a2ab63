"""A stage that is only Column chains into repartitions runs no Python task.

Its chains (:mod:`streamlib.spark.columns`) already run in the JVM after the source;
when each chain's end feeds nothing but repartitions that encode keys and values as
the chain does, the stage's tasks would only copy the rows on: Spark writes them to
the repartitions itself, tagged as a task's output would be.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from streamlib.spark.columns import chain_feeds_only
from streamlib.spark.lowerings import is_column_step
from streamlib.spark.plan import PhysicalPlan, PlanContext, PlannedStage, Runner


class ColumnsOnlyStage:
    name = "columns_only_stage"

    def applies(self, plan: PhysicalPlan, ctx: PlanContext) -> bool:
        return any(self._feeds(stage, plan, ctx) is not None for stage in plan.stages)

    def rewrite(self, plan: PhysicalPlan, ctx: PlanContext) -> PhysicalPlan:
        for stage in plan.stages:
            feeds = self._feeds(stage, plan, ctx)
            if feeds is not None:
                plan = plan.with_stage(replace(stage, runner=Runner.NONE, column_feeds=feeds))
        return plan

    @staticmethod
    def _feeds(stage: PlannedStage, plan: PhysicalPlan, ctx: PlanContext) -> Optional[dict[str, list[str]]]:
        """The repartition topics each source's chain feeds, if the stage is nothing else."""
        if stage.runner is not Runner.ARROW_MAP:
            return None
        feeds: dict[str, list[str]] = {}
        for name in stage.sub.nodes:
            node = ctx.topology.nodes[name]
            if node.spec.source:
                chain = plan.chains.get(name)
                topics = chain_feeds_only(ctx.topology, chain, ctx.config) if chain else None
                if topics is None:
                    return None
                feeds[name] = topics
            elif not (is_column_step(node) or node.spec.repartition):
                return None
        return feeds
