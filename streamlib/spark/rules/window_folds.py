"""A cached windowed reduce or aggregate folds a batch's records per window at once.

A cached time-window ``reduce`` or ``aggregate`` that emits on update forwards, per
window, only the last change of the commit, so its task may fold each window's values
in processing order at once (``TimeWindowAggregateProcessor.process_folds``: windows
assigned for the whole batch, each touched window read with one multi-get and written
once) instead of a store read and write and a cache entry per record and window. Its
stage's tasks then get their rows encoded as
:attr:`~streamlib.runtime.encoding.InputEncoding.WINDOW_FOLDS`: still one row per
record, folded when the source takes the batch whole (valid timestamps, serdes that
vouch for whole columns, no timer due within it) and the user's functions raise
nothing; otherwise record by record, as in the plain plan.

Only where the aggregation alone reads its sub-topology's one source
(``Topology.batch_reader``), with caching, and not under ``on_window_close`` (finals are
forwarded between records there). Nothing is combined before Spark's shuffle: Kafka
Streams' ``Reducer`` and ``Aggregator`` promise no associativity, so only the task that
owns a window may fold its values, in their processing order.
"""
from __future__ import annotations

from dataclasses import replace

from streamlib.node_kinds import WINDOW_AGGREGATE
from streamlib.node_params import AggregateOp
from streamlib.runtime.encoding import InputEncoding
from streamlib.spark.plan import PhysicalPlan, PlanContext, PlannedStage, Runner


class WindowFolds:
    name = "window_folds"

    def applies(self, plan: PhysicalPlan, ctx: PlanContext) -> bool:
        return bool(self._stages(plan, ctx))

    def rewrite(self, plan: PhysicalPlan, ctx: PlanContext) -> PhysicalPlan:
        for stage in self._stages(plan, ctx):
            plan = plan.with_stage(replace(stage, encoding=InputEncoding.WINDOW_FOLDS))
        return plan

    @staticmethod
    def _stages(plan: PhysicalPlan, ctx: PlanContext) -> list[PlannedStage]:
        if not ctx.config.caching:
            return []
        found = []
        for stage in plan.stages:
            if (stage.encoding is not InputEncoding.RECORDS or stage.batch_input is not None
                    or stage.runner is not Runner.ARROW_MAP or stage.loops):
                continue
            reader = ctx.topology.batch_reader(stage.sub)
            if reader is None:
                continue
            source, step = reader
            params = step.params
            if (step.spec is WINDOW_AGGREGATE and params.op is not AggregateOp.COUNT and not params.emit_final
                    and ctx.topology.stores[params.store].caching
                    and ctx.topology.stores[params.store].key_serde == source.params.key_serde):
                found.append(stage)
        return found
