"""Standby copies (``num_standby_replicas``, Kafka Streams' ``num.standby.replicas``).

A stream task's stores live on the executor that runs it (:mod:`streamlib.spark.placement`);
a task that has to move (its executor is gone) replays its changelog on the new one from
where that executor's copy stands: all of it the first time. With ``n`` standbys, each
stateful task keeps warm copies on ``n`` other executors, so the move costs at most what
the changelog grew since their last catch-up.

After each micro-batch the driver starts a **standby round** in a background thread (the
next batch does not wait for it; a round still running when a batch ends is not doubled,
the next one catches up further): a small Spark job of one Spark task per standby copy,
placed with the same JVM piece as the active tasks, that yields its rows only on its own
executor (:func:`~streamlib.spark.internals.placed_rows` ``only_there``: run elsewhere,
because its executor was busy past the locality wait or is gone, it does nothing rather
than build a copy there). Each opens the task's stores on its machine and catches them up
from the changelogs to the end of the batch just committed (:meth:`TaskStores.follow`):
read only, it never writes a changelog, a sink or a topic, never undoes, leaves alone a
copy that already reflects a later batch (an active one), and skips a copy another
process holds (the active task on a machine it shares). Then it closes the copy.

Where a task goes when its executor is lost, :func:`~streamlib.spark.placement.choose_locations`
prefers a live executor holding one of its standbys (Kafka Streams' assignor prefers
caught-up standbys); the standby choice (:func:`~streamlib.spark.placement.choose_standbys`)
keeps standbys where they are while their executor lives.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from typing import Any, Callable, Iterator, Optional

import pyarrow as pa
from pyspark.sql import SparkSession

from streamlib.runtime.batches import data_pass
from streamlib.runtime.task import Task
from streamlib.spark import internals
from streamlib.spark.daemon import start_worker_task
from streamlib.spark.tasks import StagePlan
from streamlib.state import open_task_stores
from streamlib.state.cache import STORE_CACHE
from streamlib.state.global_replica import open_global_replicas
from streamlib.state.rocksdb import lock_held_elsewhere
from streamlib.state.task import META_STORE

log = logging.getLogger("streamlib")

#: seconds a standby waits for a copy another process took between its look and its open
LOCK_WAIT = 5.0
#: seconds :meth:`Standbys.stop` waits for a running round before cancelling its job
STOP_WAIT = 60.0
_REPORT_SCHEMA = pa.schema([("report", pa.string())])


def follow_task(plan: StagePlan, partition: int, before_batch: int) -> dict[str, Any]:
    """On an executor: catch this machine's copy of the stage's task for ``partition``
    up from its changelogs to the batches before ``before_batch``, read only; its
    changelog offsets and the records it applied (``busy``: another process holds it)."""
    backend = plan.backend.open()
    sub = plan.topology.subtopologies[plan.sub_id]
    task = Task(plan.topology, sub, partition, plan.config, backend.num_partitions)
    task_dir = plan.config.task_state_dir(task.task_id)
    # a copy this worker keeps open since it ran the task itself: idle, closed here
    STORE_CACHE.close_under(task_dir)
    specs = task.store_specs()
    if any(lock_held_elsewhere(os.path.join(task_dir, name, "LOCK")) for name in [*(s.name for s in specs), META_STORE]):
        return {"task": task.task_id, "busy": True}
    stores = open_task_stores(task_dir, specs, backend=backend, partition=partition,
                              num_partitions=plan.num_partitions, producer_prefix=plan.config.application_id,
                              meta_changelog_topic=plan.config.task_changelog_topic(sub.id),
                              lock_timeout=LOCK_WAIT, create_changelogs=False)
    try:
        followed = stores.follow(before_batch)
        offsets = stores.changelog_offsets()
        applied = stores.metrics()["restored_records"]
    finally:
        stores.close()
    replicas = open_global_replicas(task_dir, plan.topology.global_stores_of(sub), backend)
    for replica in replicas.values():
        applied += replica.metrics.restored_records
        replica.close()
    return {"task": task.task_id, "offsets": offsets, "applied": applied, "ahead": not followed}


def round_function(plans: dict[int, StagePlan], assignments: list[tuple[int, int]], before_batch: int
                   ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of a round over ``spark.range(len(assignments))``:
    row ``i`` catches up the copy of ``assignments[i]`` (sub-topology, partition)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        start_worker_task()
        for batch in batches:
            for index in batch.column(0).to_pylist():
                sub_id, partition = assignments[index]
                try:
                    report = follow_task(plans[sub_id], partition, before_batch)
                except Exception as exc:  # noqa: BLE001 - this copy stays behind; the others go on
                    report = {"error": f"{type(exc).__name__}: {exc}"}
                report["index"] = index
                yield pa.RecordBatch.from_pylist([{"report": json.dumps(report)}], _REPORT_SCHEMA)

    return run


def lag(active: dict[str, int], standby: Optional[dict[str, int]]) -> int:
    """Changelog records a standby copy at offsets ``standby`` (per store; None: never
    caught up) has not applied, of those the active copy reflects (at ``active``).

    >>> lag({"a": 10, "b": 4}, {"a": 7, "b": 4})
    3
    >>> lag({"a": 10}, None)
    10
    """
    standby = standby or {}
    return sum(max(0, end - standby.get(store, 0)) for store, end in active.items())


class Standbys:
    """The standby copies of an application's stateful tasks, and their rounds."""

    def __init__(self, spark: SparkSession, replicas: int):
        self.spark = spark
        self.replicas = replicas
        self.runs = internals.placement_runs(spark)
        #: sub-topology -> its stage's plan (the current query's)
        self.plans: dict[int, StagePlan] = {}
        #: task -> the locations chosen for its standbys
        self.assigned: dict[str, list[str]] = {}
        #: task -> location -> {"offsets", "batch"} of its last catch-up there
        self.copies: dict[str, dict[str, dict]] = {}
        self.rounds = 0
        self.skipped = 0
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._group = f"streamlib-standby-{uuid.uuid4().hex}"
        self._short_warned: Optional[int] = None

    def warn_if_short(self, live: int) -> None:
        """One log line when there are fewer executors than a task and its standbys need."""
        if live and live < self.replicas + 1 and self._short_warned != live:
            log.warning("streamlib: num_standby_replicas=%d needs %d executors, %d are live: each task "
                        "keeps %d standby copies", self.replicas, self.replicas + 1, live, live - 1)
            self._short_warned = live

    def forget(self, location: str) -> None:
        """``location``'s copies are gone (its executor is)."""
        with self._lock:
            for copies in self.copies.values():
                copies.pop(location, None)

    def warm(self, task: str, active_offsets: dict[str, int]) -> list[str]:
        """The task's standby locations, least lag first."""
        with self._lock:
            copies = self.copies.get(task, {})
            return sorted(self.assigned.get(task, []),
                          key=lambda where: lag(active_offsets, copies.get(where, {}).get("offsets")))

    def start_round(self, batch_id: int, assigned: dict[str, list[str]], stage_of: Callable[[str], tuple]) -> bool:
        """Catch the ``assigned`` standbys up to micro-batch ``batch_id`` in the
        background; False (nothing started) while the last round still runs."""
        with self._lock:
            self.assigned = {task: list(where) for task, where in assigned.items()}
            for task, copies in self.copies.items():   # copies no longer standbys are not followed
                for where in list(copies):
                    if where not in self.assigned.get(task, []):
                        del copies[where]
            if self._thread is not None and self._thread.is_alive():
                self.skipped += 1
                return False
            work = [(task, where) for task, places in sorted(self.assigned.items()) for where in places]
            if not work:
                return False
            self._thread = threading.Thread(target=self._round, args=(batch_id, work, stage_of),
                                            name="streamlib-standby", daemon=True)
            self._thread.start()
            return True

    def _round(self, batch_id: int, work: list[tuple[str, str]], stage_of: Callable[[str], tuple]) -> None:
        before = data_pass(batch_id + 1)
        try:
            context = self.spark.sparkContext
            context.setJobGroup(self._group, f"streamlib standby copies after batch {batch_id}")
            assignments = [stage_of(task) for task, _ in work]
            rows = self.spark.range(0, len(work), 1, len(work))
            placed = internals.placed_rows(rows, "standby", [where for _, where in work], self.runs, only_there=True)
            function = round_function(dict(self.plans), assignments, before)
            reports = [json.loads(row.report) for row in placed.mapInArrow(function, "report string").collect()]
            internals.take_placement_runs(self.spark, self.runs)
        except Exception as exc:  # noqa: BLE001 - a failed round leaves the copies behind, no more
            log.warning("streamlib: standby copies after batch %d were not caught up: %s", batch_id, exc)
            return
        with self._lock:
            self.rounds += 1
            for report in reports:   # (none from a copy whose Spark task ran elsewhere)
                task, where = work[report["index"]]
                if "error" in report:
                    log.warning("streamlib: the standby copy of task %s on executor %s was not caught up: %s",
                                task, where.rsplit("_", 1)[1], report["error"])
                if "offsets" in report:
                    self.copies.setdefault(task, {})[where] = {"offsets": report["offsets"], "batch": batch_id}

    def stop(self, timeout: float = STOP_WAIT) -> None:
        """Wait for a running round (``timeout`` s), then cancel it."""
        thread = self._thread
        if thread is None:
            return
        thread.join(timeout)
        if thread.is_alive():
            self.spark.sparkContext.cancelJobGroup(self._group)
            thread.join(10)

    def summary(self, active_offsets: Callable[[str], dict[str, int]]) -> dict[str, Any]:
        """Per task: its standbys' executors with their lag and the batch they reflect."""
        with self._lock:
            copies = {task: dict(where) for task, where in self.copies.items()}
            assigned = {task: list(where) for task, where in self.assigned.items()}
        out: dict[str, list[dict]] = {}
        for task, places in sorted(assigned.items()):
            active = active_offsets(task)
            out[task] = [{"executor": where.rsplit("_", 1)[1],
                          "lag": lag(active, copies.get(task, {}).get(where, {}).get("offsets")),
                          "batch": copies.get(task, {}).get(where, {}).get("batch")}
                         for where in places]
        return {"replicas": self.replicas, "rounds": self.rounds, "skipped_rounds": self.skipped, "tasks": out}

