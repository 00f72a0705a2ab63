"""A small batch's stateful first stage runs in the source's one read task.

A micro-batch of a few hundred records costs Spark far more in tasks than in work: its
read (one Python task, the source reads small batches together), a shuffle, and the
stateful stage's Python task (60-100 ms each before the first row, while the tasks'
own work is 15-25 ms). For a batch of at most :data:`IN_READER_RECORDS` records the
read task runs the stage's tasks itself, over the rows it has just read: each row goes
to the task of its key by Spark's hash, as the shuffle by key would send it
(:func:`~streamlib.spark.tasks.small_batch_reader_function`), every task orders its rows
itself, and a time-aware stage runs every task, as its ticks make it. One Python task,
no shuffle. A bigger batch runs the plain plan. The choice is made per batch by the
driver from the batch's offsets (``BatchPlan.build``) and handed to the read task in a
Spark local property; a read task told to run the stage but holding only part of the
batch refuses to (the source reads every batch of fewer than ``READ_TOGETHER_RECORDS``
records in one task, so it never happens).

Only under one executor (``local[n]``): on a cluster each task runs where its stores are
(:mod:`streamlib.spark.placement`), and the read task runs wherever Spark puts it.
Only for the one stage that reads the application's topics, when it is stateful, reads
no repartition, takes its rows as read (no pre-aggregation, no Column steps), and feeds
at most one repartition read by one stage (else the source would be read, and the stage
run, once per use). Not with Kafka (Spark's own source reads it), nor beside a
stateless reader stage or windowed counts the reader pre-aggregates (the source runs
one of them).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from streamlib.spark import kafka_source
from streamlib.spark.plan import PhysicalPlan, PlanContext, PlannedStage, Runner, user_sources

#: A batch of at most this many records runs the stage in the read task; it stays below
#: the records the source reads in one task (``app.READ_TOGETHER_RECORDS``), as
#: ``lower.ONE_TASK_RECORDS`` (the same trade: a Python task against a few hundred records).
IN_READER_RECORDS = 1_000


class SmallBatchReader:
    name = "small_batch_reader"

    def applies(self, plan: PhysicalPlan, ctx: PlanContext) -> bool:
        return self._stage(plan, ctx) is not None

    def rewrite(self, plan: PhysicalPlan, ctx: PlanContext) -> PhysicalPlan:
        stage = self._stage(plan, ctx)
        return plan if stage is None else plan.with_stage(replace(stage, in_reader_up_to=IN_READER_RECORDS))

    @staticmethod
    def _stage(plan: PhysicalPlan, ctx: PlanContext) -> Optional[PlannedStage]:
        if (ctx.cluster or plan.window_counts or plan.reader_stage is not None or ctx.backend is None
                or kafka_source.is_kafka(ctx.backend.url)):
            return None
        readers = [stage for stage in plan.stages if user_sources(ctx.topology, stage.sub)]
        if len(readers) != 1:
            return None
        stage = readers[0]
        if (stage.runner is not Runner.ARROW_MAP or not stage.sub.stateful or not stage.shuffled
                or stage.sub.repartition_inputs or stage.batch_input is not None or stage.loops
                or stage.readers > 1 or len(stage.writes) > 1
                or any(plan.chains.get(name) for name in user_sources(ctx.topology, stage.sub))):
            return None
        return stage
