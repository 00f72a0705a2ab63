"""One micro-batch of the application's query, from its start to its end.

Spark calls :meth:`MicroBatches.run` (the query's ``foreachBatch`` function) with the
batch's rows. A micro-batch ``b`` is, in order:

1. **the data pass**: every stage over the batch's records, as internal batch ``2b``
   (:mod:`streamlib.runtime.batches`: stores and sinks see each pass as a batch of its
   own). Tasks are not moved to the application's stream time here: a task may still
   have input waiting (a batch cut mid-backlog) whose on-time records that would make
   late.
2. **the time pass**, when the data pass moved the application's stream time past some
   time-aware task and no input is waiting: no records (the batch's rows through
   ``limit(0)``), internal batch ``2b + 1``, every task advanced to the stream time, so
   windows close everywhere without new input (Spark's no-data batch). Left out while
   input waits: windows close once the backlog is read (DESIGN.md, "Time and order").
3. the stream time the batch started from is logged
   (:mod:`streamlib.spark.stream_time_log`), so a re-run or a restart starts from it, and
   the changelog positions its tasks reached (:mod:`streamlib.spark.changelog_positions`),
   which a copy restored later must find still logged;
4. the tasks' metrics are added up, and the interactive queries publish the batch;
5. a progress line (:mod:`streamlib.progress`).
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any, Callable, Optional

from streamlib.processors.drops import add_drops
from streamlib.progress import Progress
from streamlib.runtime.batches import data_pass, time_pass
from streamlib.spark.changelog_positions import POSITIONS_PROPERTY, ChangelogPositions
from streamlib.spark.internals import callback_connection, end_callback_connection
from streamlib.spark.log_epochs import batch_records
from streamlib.spark.lower import BatchPlan
from streamlib.spark.stream_time_log import StreamTimeLog, input_waiting, planned_end

#: counters summed over every task and pass since the application started
COUNTERS = ("records_in", "records_out", "dropped_records", "skipped_records", "dead_letter_records",
            "restored_records")


class MicroBatches:
    """Runs the application's micro-batches and keeps what they add up to.

    Its totals outlive one query: an application started again (``process_available``
    after ``process_available``) goes on counting.

    Parameters
    ----------
    queries : callable
        Returns the interactive queries (``streamlib.query.service.Queries``).
    progress : Progress
        Prints the progress line.
    """

    def __init__(self, queries: Callable[[], Any], progress: Progress):
        self._queries = queries
        self._progress = progress
        self._lock = threading.Lock()
        self._totals: dict[str, int] = defaultdict(int)
        self._drops: dict[str, dict[str, int]] = {}   # reason -> node -> records dropped
        self._tasks: dict[str, dict] = {}
        self._last_batch: Optional[int] = None
        #: the application's stream time: the largest over all tasks (-1: none yet)
        self._stream_time = -1
        self.plan: Optional[BatchPlan] = None
        #: the Py4J connection the running query calls ``run`` on (let go at ``stop``)
        self._callback: Optional[Any] = None

    def begin(self, plan: BatchPlan, checkpoint: str, input_backend: Any) -> None:
        """Run the batches of a new query with ``plan``, its checkpoint directory (the
        stream-time log lives there) and the topics' backend to tell whether input is
        waiting past a batch (None where that cannot be known, as with Kafka, whose log
        end may count transaction markers: the time pass then always runs)."""
        earlier, self.plan = self.plan, plan
        if earlier is not None and earlier.placement is not None and plan.placement is not None:
            plan.placement.go_on_from(earlier.placement)
        self._checkpoint = checkpoint
        self._time_log = StreamTimeLog(checkpoint)
        self._positions = ChangelogPositions(checkpoint)
        self._input_backend = input_backend

    def run(self, df: Any, batch_id: int) -> None:
        """Micro-batch ``batch_id`` over its rows ``df`` (see the module doc)."""
        started = time.monotonic()
        if self._callback is None:
            self._callback = callback_connection(df.sparkSession)
        reports = self._passes(df, batch_id)
        self._progress.batch_done(batch_id, reports, time.monotonic() - started, self._stream_time)

    def _passes(self, df: Any, batch_id: int) -> dict[str, dict]:
        started = time.perf_counter()
        before = self._start_of(batch_id)
        end = planned_end(self._checkpoint, batch_id)   # read once: the record count and the time pass
        # (as the source counts them: a small batch may run its stateful stage in its read task)
        records = batch_records(planned_end(self._checkpoint, batch_id - 1) if batch_id > 0 else None, end)
        reports = self._pass(df, batch_id, data_pass(batch_id), -1, records)
        if self.plan.time_aware:
            behind = [m for m in reports.values()
                      if m.get("time_aware") and m.get("stream_time", -1) < self._stream_time]
            if behind and not self._input_waiting(end):
                # (as many Spark tasks as the data pass: its plan's template serves)
                reports = {**reports, **self._pass(df.limit(0), batch_id, time_pass(batch_id), self._stream_time,
                                                   records)}
            self._time_log.record(batch_id, before, self._stream_time)
        self._positions.update(reports)
        self._positions.save()
        with self._lock:
            self._last_batch = batch_id
        self._queries().committed(time_pass(batch_id), reports, time.perf_counter() - started)
        if self.plan.placement is not None:   # standby copies catch up in the background
            self.plan.placement.after_batch(batch_id, reports)
        return reports

    def _start_of(self, batch_id: int) -> int:
        """The stream time a batch starts from: after a restart, or in a re-run of a
        failed batch, the one the time log holds for it."""
        with self._lock:
            logged = self._time_log.start_of(batch_id) if self.plan.time_aware else None
            if logged is not None:
                self._stream_time = logged
            return self._stream_time

    def _input_waiting(self, end: Optional[dict]) -> bool:
        """Whether the source holds records past a batch's ``end`` offsets (so a next batch comes)."""
        if self._input_backend is None:
            return False
        return input_waiting(end, self._input_backend)

    def _pass(self, df: Any, batch_id: int, internal_batch: int, stream_time: int,
              records: Optional[int]) -> dict[str, dict]:
        """One run of every stage over ``records`` (None: not known); the tasks' metrics,
        with where the placed ones ran, added to the totals."""
        # (the job runs in this thread: its tasks read the property there)
        df.sparkSession.sparkContext.setLocalProperty(POSITIONS_PROPERTY, self._positions.property_value())
        self.plan.run(df, internal_batch, stream_time, records)
        reports = self.plan.metrics.value.get("tasks", {})
        self.plan.metrics.value = {"tasks": {}}
        if self.plan.placement is not None:
            for task, where in self.plan.placement.record(batch_id, reports).items():
                if task in reports:   # (a task without rows reports nothing)
                    reports[task] = {**reports[task], **where}
        with self._lock:
            for task_id, metrics in reports.items():
                for counter in COUNTERS:
                    self._totals[counter] += int(metrics.get(counter, 0))
                add_drops(self._drops, metrics.get("drops"))
                self._tasks[task_id] = metrics
                self._stream_time = max(self._stream_time, metrics.get("stream_time", -1))
        self._queries().pass_ran(reports)
        return reports

    def stop(self) -> None:
        """The query stopped: let a running standby round finish, and let go of the
        connection its batches were called on."""
        if self.plan is not None and self.plan.placement is not None:
            self.plan.placement.stop()
        if self._callback is not None:
            end_callback_connection(self._callback)
            self._callback = None

    def totals(self) -> tuple[dict[str, Any], dict[str, dict], Optional[int]]:
        """``(counters and drops per reason and node, each task's last metrics, the last
        batch)`` so far."""
        with self._lock:
            counters: dict[str, Any] = {counter: self._totals[counter] for counter in COUNTERS}
            counters["drops"] = {reason: dict(by_node) for reason, by_node in self._drops.items()}
            if self.plan is not None and self.plan.placement is not None:
                counters["placement"] = self.plan.placement.summary()
            return counters, {task_id: dict(m) for task_id, m in self._tasks.items()}, self._last_batch
