"""Windowed counts are pre-aggregated by the source's reader, before Spark's shuffle.

The conditions and why the result is exact: :mod:`streamlib.spark.window_counts`
(a cached, emit-on-update time-window count reading a user topic of the embedded log
that no other stage reads). The count's stage then gets rows encoded as
:attr:`~streamlib.runtime.encoding.InputEncoding.WINDOW_COUNTS`. Not with Kafka:
Spark's own Kafka source reads those topics. Nor under ``max_future_skew``: the wall
clock that judges each record's timestamp is the task's, so its source must see them.
"""
from __future__ import annotations

from dataclasses import replace

from streamlib.runtime.encoding import InputEncoding
from streamlib.spark import kafka_source
from streamlib.spark.plan import PhysicalPlan, PlanContext, user_sources
from streamlib.spark.window_counts import WindowCountInput, window_count_inputs


class WindowCountPreAggregation:
    name = "window_count_preaggregation"

    def applies(self, plan: PhysicalPlan, ctx: PlanContext) -> bool:
        return bool(self._inputs(plan, ctx))

    def rewrite(self, plan: PhysicalPlan, ctx: PlanContext) -> PhysicalPlan:
        inputs = self._inputs(plan, ctx)
        plan = replace(plan, window_counts=inputs)
        for stage in plan.stages:
            topics = {t for name in user_sources(ctx.topology, stage.sub)
                      for t in ctx.topology.nodes[name].params.topics}
            if topics and topics <= set(inputs):
                plan = plan.with_stage(replace(stage, encoding=InputEncoding.WINDOW_COUNTS))
        return plan

    @staticmethod
    def _inputs(plan: PhysicalPlan, ctx: PlanContext) -> dict[str, WindowCountInput]:
        if ctx.backend is not None and kafka_source.is_kafka(ctx.backend.url):
            return {}
        if ctx.config.max_future_skew_ms is not None:
            return {}
        if plan.window_counts or plan.reader_stage is not None:
            return {}
        return window_count_inputs(ctx.topology, ctx.config,
                                   {stage.sub.id: stage.partitions for stage in plan.stages})
