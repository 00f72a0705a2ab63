"""A cached count's input is pre-aggregated per key before Spark's shuffle.

A cached count emits each key's last change per commit, which depends only on how
many records the key had and their largest timestamp, so Spark may aggregate its
repartition's rows per key first (the count's batch lowering,
:mod:`streamlib.spark.preaggregate`); the count's tasks then get rows encoded as
:attr:`~streamlib.runtime.encoding.InputEncoding.COUNTED`. A Python stage that writes
that repartition combines its tasks' rows per key itself.

Not where the count's stage has its own task count (the pre-aggregation shuffles into
the application's), nor for rows of a user topic (each must pass its serdes and the
deserialization handler one by one): :func:`~streamlib.spark.lowerings.stage_batch_input`.
"""
from __future__ import annotations

from dataclasses import replace

from streamlib.runtime.encoding import InputEncoding
from streamlib.spark.lowerings import stage_batch_input
from streamlib.spark.plan import PhysicalPlan, PlanContext, Runner
from streamlib.spark.preaggregate import PreAggregate


class CountPreAggregation:
    name = "count_preaggregation"

    def applies(self, plan: PhysicalPlan, ctx: PlanContext) -> bool:
        return bool(self._lowerings(plan, ctx))

    def rewrite(self, plan: PhysicalPlan, ctx: PlanContext) -> PhysicalPlan:
        for sub_id, lowering in self._lowerings(plan, ctx).items():
            writer = plan.writer_of(lowering.topic)
            if writer.runner is not Runner.NONE:   # (Spark combines a JVM stage's rows itself)
                lowering = replace(lowering, combined=True)
                plan = plan.with_stage(replace(writer, combines=writer.combines | {lowering.topic}))
            stage = next(s for s in plan.stages if s.sub.id == sub_id)
            plan = plan.with_stage(replace(stage, batch_input=lowering, encoding=InputEncoding.COUNTED))
        return plan

    @staticmethod
    def _lowerings(plan: PhysicalPlan, ctx: PlanContext) -> dict[int, PreAggregate]:
        found = {}
        for stage in plan.stages:
            if stage.partitions != ctx.num_partitions or stage.batch_input is not None:
                continue
            lowering = stage_batch_input(ctx.topology, stage.sub, ctx.config)
            if isinstance(lowering, PreAggregate):
                found[stage.sub.id] = lowering
        return found
