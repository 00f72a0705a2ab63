"""Where a micro-batch's time goes in the latency probe's application, batch by batch.

Runs ``../shared/bench/latency_probe.py``'s set-up (a count per key on the embedded log,
4 partitions, ``Streams.start()`` with a ``--interval-ms`` commit interval, ``--rate``
unique keys a second for ``--seconds``) with Spark's UI on, then prints medians over the
batches with input of: Spark's ``durationMs`` parts (``query.recentProgress``); the
Spark jobs and stages each batch ran, with their tasks' times (Spark's REST API, by the
batch id in each job's description); and the driver's own parts of ``addBatch``
(timers around streamlib's functions in this process). The UI and the timers cost a
little: for latency itself, run the probe.

    .venv/bin/python benchmarks/latency_profile.py [--rate 500] [--seconds 20] [--interval-ms 200]
        [--slowest 5]

``--slowest N`` then lists the N batches whose trigger took longest (the latency's tail
is records that waited behind them): each one's Spark parts and its jobs' stages.
"""
from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from batch_profile import Rest  # noqa: E402
from streamlib import Consumed, Materialized, Produced, Serdes, Streams, StreamsBuilder, StreamsConfig  # noqa: E402
from streamlib.progress import Progress  # noqa: E402
from streamlib.query.replica import StoreReplicas  # noqa: E402
from streamlib.query.service import Queries  # noqa: E402
from streamlib.spark.changelog_positions import ChangelogPositions  # noqa: E402
from streamlib.spark.lower import BatchPlan  # noqa: E402
from streamlib.spark.micro_batch import MicroBatches  # noqa: E402
from streamlib.spark.session import get_or_create_session  # noqa: E402
from streamlib.topics import open_backend  # noqa: E402

#: driver-side functions timed: (class, method, label)
TIMED = ((MicroBatches, "run", "foreachBatch (all of streamlib's driver work + the job)"),
         (BatchPlan, "build", "  BatchPlan.build (the batch's DataFrame)"),
         (BatchPlan, "run", "  BatchPlan.run (build + the job)"),
         (ChangelogPositions, "save", "  changelog positions saved"),
         (Queries, "committed", "  interactive queries told"),
         (Progress, "batch_done", "  progress line"),
         (StoreReplicas, "_apply", "interactive queries' replicas: a batch applied (background)"))


def timers() -> dict[str, list[float]]:
    spent: dict[str, list[float]] = defaultdict(list)
    for cls, name, label in TIMED:
        original = getattr(cls, name)

        def timed(*args, _original=original, _label=label, **kwargs):
            started = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                spent[_label].append(time.perf_counter() - started)

        setattr(cls, name, functools.wraps(original)(timed))
    return spent


def med(values: list[float]) -> str:
    return f"{statistics.median(values):7.0f}" if values else "      -"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=int, default=500)
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--interval-ms", type=int, default=200)
    p.add_argument("--slowest", type=int, default=5, help="list this many of the slowest batches")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="latency-profile-")
    boot = f"local://{work}/log"
    backend = open_backend(boot)
    backend.create_topic("in", partitions=4)
    backend.create_topic("out", partitions=4)
    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(Serdes.string(), Serdes.string()))
     .group_by_key().count(materialized=Materialized.as_("c")).to_stream()
     .to("out", produced=Produced.with_(Serdes.string(), Serdes.long())))
    spark = get_or_create_session(conf={"spark.ui.enabled": "true"})
    rest = Rest(spark)
    spent = timers()
    app = Streams(builder.build(), StreamsConfig(application_id="latprof", bootstrap=boot, state_dir=f"{work}/state",
                                                 commit_interval=timedelta(milliseconds=a.interval_ms)), spark=spark)
    app.start()
    time.sleep(15)   # the first batches: JVM warm-up, Python workers
    for values in spent.values():
        values.clear()
    first = max(rest.job_ids(), default=-1) + 1
    print(f"load average before: {os.getloadavg()}", flush=True)
    start, i = time.time(), 0
    while time.time() - start < a.seconds:
        delay = start + i / a.rate - time.time()
        if delay > 0:
            time.sleep(delay)
        backend.produce("in", key=f"k{i}".encode(), value=b"1", timestamp=int(time.time() * 1000))
        backend.flush()
        i += 1
    time.sleep(3)
    # A batch with input is one whose source offsets moved: Spark's numInputRows counts the
    # rows our source hands on, none when a rule ran the batch's tasks in the read task.
    progress = [pr for pr in app._query.recentProgress
                if any(src.startOffset != src.endOffset for src in pr.sources)]
    app.stop()
    time.sleep(1)
    print(f"load average after: {os.getloadavg()}; {len(progress)} batches with input, median "
          f"{statistics.median(pr.numInputRows for pr in progress):.0f} rows handed on by the source")
    print("Spark's durationMs (median over those batches, ms):")
    for part in ("triggerExecution", "latestOffset", "getBatch", "queryPlanning", "walCommit", "addBatch",
                 "commitOffsets"):
        print(f"  {part:<18}{med([pr.durationMs.get(part, 0) for pr in progress])}")
    with_input = {int(pr.batchId) for pr in progress}
    jobs = [job for job in rest.get("jobs") if job["jobId"] >= first]
    by_batch: dict[int, list[dict]] = defaultdict(list)
    for job in jobs:
        found = re.search(r"batch = (\d+)", job.get("description", "") or "")
        if found and int(found.group(1)) in with_input:
            by_batch[int(found.group(1))].append(job)
    print(f"Spark jobs per batch with input: {sorted({len(v) for v in by_batch.values()})}; "
          f"stages per job: {sorted({len(j['stageIds']) for v in by_batch.values() for j in v})}")
    stage_rows: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for batch_jobs in by_batch.values():
        for job in batch_jobs:
            for index, stage_id in enumerate(sorted(job["stageIds"])):
                for stage in rest.get(f"stages/{stage_id}"):
                    if stage["status"] != "COMPLETE":
                        continue
                    row = stage_rows[index]
                    tasks = rest.get(f"stages/{stage_id}/{stage['attemptId']}/taskList?length=100")
                    row["stage wall"].append(stage["executorRunTime"] and _span(stage))
                    row["tasks"].append(len(tasks))
                    for task in tasks:
                        metrics = task.get("taskMetrics", {})
                        row["task duration"].append(task["duration"])
                        row["task run time"].append(metrics.get("executorRunTime", 0))
                        row["task deserialize"].append(metrics.get("executorDeserializeTime", 0))
                        row["scheduler delay"].append(task.get("schedulerDelay", 0))
                        row["shuffle read wait"].append(metrics.get("shuffleReadMetrics", {}).get("fetchWaitTime", 0))
    for index, row in sorted(stage_rows.items()):
        print(f"  stage {index} of the job: " + ", ".join(f"{name} {med(values).strip()}" for name, values in row.items())
              + " (ms, medians)")
    triggers = sorted(pr.durationMs.get("triggerExecution", 0) for pr in progress)
    print(f"triggerExecution over those batches (ms): p50 {triggers[len(triggers) // 2]}, "
          f"p90 {triggers[int(len(triggers) * 0.9)]}, max {triggers[-1]}")
    slowest = sorted(progress, key=lambda pr: -pr.durationMs.get("triggerExecution", 0))[:a.slowest]
    for pr in slowest:
        parts = ", ".join(f"{part} {pr.durationMs.get(part, 0)}" for part in (
            "latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets"))
        print(f"  slow batch {pr.batchId}: triggerExecution "
              f"{pr.durationMs.get('triggerExecution', 0)} ms = {parts}")
        for job in by_batch.get(int(pr.batchId), []):
            spans = []
            for stage_id in sorted(job["stageIds"]):
                for stage in rest.get(f"stages/{stage_id}"):
                    if stage["status"] == "COMPLETE":
                        tasks = rest.get(f"stages/{stage_id}/{stage['attemptId']}/taskList?length=100")
                        spans.append(f"{_span(stage):.0f} ms ({len(tasks)} tasks: "
                                     + " ".join(f"{t['duration']}" for t in tasks) + ")")
            print(f"    job {job['jobId']}: " + "; ".join(spans))
    print("driver (median ms per call):")
    for _, _, label in TIMED:
        print(f"  {label:<58}{med([s * 1000 for s in spent[label]])}  ({len(spent[label])} calls)")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


def _span(stage: dict) -> float:
    from batch_profile import seconds

    return (seconds(stage["completionTime"]) - seconds(stage["submissionTime"])) * 1000


if __name__ == "__main__":
    main()
