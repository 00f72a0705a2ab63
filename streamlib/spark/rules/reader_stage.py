"""A stateless first stage runs in the source's reader.

Under ``mapInArrow`` its input would go from the reader's Python worker into the JVM
and on to a second Python worker; run by the reader, only its output reaches the JVM
(a count's combined rows, say: one per key and task).

Only for the one stage that reads the application's topics, when it is stateless,
needs no shuffle, ticks or Column steps, and feeds at most one repartition read by one
stage (else the source would be read, and the stage run, once per use). Not with
Kafka (Spark's own source reads it), nor beside windowed counts the reader
pre-aggregates (the reader does one or the other).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from streamlib.spark import kafka_source
from streamlib.spark.plan import PhysicalPlan, PlanContext, PlannedStage, Runner, user_sources


class ReaderStage:
    name = "reader_stage"

    def applies(self, plan: PhysicalPlan, ctx: PlanContext) -> bool:
        return self._stage(plan, ctx) is not None

    def rewrite(self, plan: PhysicalPlan, ctx: PlanContext) -> PhysicalPlan:
        stage = self._stage(plan, ctx)
        return plan if stage is None else plan.with_stage(replace(stage, runner=Runner.READER))

    @staticmethod
    def _stage(plan: PhysicalPlan, ctx: PlanContext) -> Optional[PlannedStage]:
        if plan.window_counts or ctx.backend is None or kafka_source.is_kafka(ctx.backend.url):
            return None
        readers = [stage for stage in plan.stages if user_sources(ctx.topology, stage.sub)]
        if len(readers) != 1:
            return None
        stage = readers[0]
        sources = user_sources(ctx.topology, stage.sub)
        if (stage.runner is not Runner.ARROW_MAP or stage.shuffled or stage.time_aware
                or stage.readers > 1 or len(stage.writes) > 1
                or any(plan.chains.get(name) for name in sources)):
            return None
        return stage
