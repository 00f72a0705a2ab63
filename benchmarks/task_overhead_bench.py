"""The fixed cost of one stateful task's batch, without Spark around it.

Calls ``streamlib.spark.tasks.run_task`` (what ``mapInArrow`` runs per partition) for
a count task (``stream -> group_by_key -> count -> to``) over batches of one record,
batch after batch in one process, as a reused Spark Python worker does, three ways
interleaved round by round (so machine load hits all alike):

- ``reopen``: stores opened and closed every batch, every append fsynced by itself
  (what tasks did before the store cache and group commit);
- ``cached``: stores kept open between batches (``streamlib.state.cache``);
- ``cached+group``: also the batch's changelog and sink appends synced together
  (``TopicBackend.group_commit``), as ``stage_function`` runs a task now.

    .venv/bin/python benchmarks/task_overhead_bench.py [--batches 40] [--profile]

``--profile`` prints where the ``cached+group`` batches' time goes (cProfile, by own time).
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import pyarrow as pa  # noqa: E402

from streamlib import (Consumed, Materialized, Produced, Serdes, StreamsBuilder,  # noqa: E402
                       StreamsConfig)
from streamlib.preflight import prepare_changelogs  # noqa: E402
from streamlib.spark.arrow import SOURCE_ARROW_SCHEMA, source_batches  # noqa: E402
from streamlib.topics.spec import BackendSpec  # noqa: E402
from streamlib.spark.tasks import StagePlan, run_task  # noqa: E402
from streamlib.state.cache import STORE_CACHE  # noqa: E402
from streamlib.topics import open_backend, records_to_arrow  # noqa: E402

MODES = ("reopen", "cached", "cached+group")


def plan_for(work: str, mode: str) -> StagePlan:
    boot = f"local://{work}/log-{mode}"
    backend = open_backend(boot)
    for topic in ("in", "out"):
        backend.create_topic(topic, partitions=1)
    b = StreamsBuilder()
    (b.stream("in", consumed=Consumed.with_(Serdes.string(), Serdes.string()))
     .group_by_key().count(materialized=Materialized.as_("counts")).to_stream()
     .to("out", produced=Produced.with_(Serdes.string(), Serdes.long())))
    config = StreamsConfig(application_id=f"overhead-{mode.replace('+', '-')}", bootstrap=boot,
                           state_dir=f"{work}/state", checkpoint_location=f"{work}/checkpoint-{mode}")
    topology = b.build()
    prepare_changelogs(topology, config, backend, {0: 1})   # as Streams.start() does: tasks create no topics
    return StagePlan(topology, config, BackendSpec(boot), 0, 1, frozenset())


def one_record(batch: int) -> pa.Table:
    records = records_to_arrow([(b"key%d" % (batch % 7), b"1", 1000 + batch, ())])
    records = records.add_column(0, "offset", pa.array([batch], pa.int64()))
    return pa.Table.from_batches(list(source_batches(records, "in", 0)), SOURCE_ARROW_SCHEMA)


def run_batch(plan: StagePlan, mode: str, batch: int) -> float:
    group = plan.backend.open().group_commit() if mode == "cached+group" else contextlib.nullcontext()
    started = time.perf_counter()
    with group:
        run_task(plan, batch, 0, one_record(batch), f"{plan.config.application_id}/q")
        if mode == "reopen":   # (not by a zero lease: the cache's reaper would close every mode's stores)
            STORE_CACHE.close_under(plan.config.application_state_dir)
    return time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--profile", action="store_true", help="cProfile the cached+group batches")
    a = p.parse_args()
    profile = cProfile.Profile() if a.profile else None
    work = tempfile.mkdtemp(prefix="task-overhead-")
    try:
        STORE_CACHE.lease = 3600.0
        plans = {mode: plan_for(work, mode) for mode in MODES}
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        print(f"load average: {os.getloadavg()}")
        for batch in range(a.batches + 2):
            for mode in MODES:
                profiled = profile is not None and mode == "cached+group" and batch >= 2
                if profiled:
                    profile.enable()
                elapsed = run_batch(plans[mode], mode, batch)
                if profiled:
                    profile.disable()
                if batch >= 2:  # the first batches create topics and stores
                    times[mode].append(elapsed)
        STORE_CACHE.close_all()
        for mode in MODES:
            ts = sorted(times[mode])
            print(f"{mode:<14} median {statistics.median(ts) * 1000:7.1f} ms   "
                  f"p90 {ts[int(0.9 * (len(ts) - 1))] * 1000:7.1f} ms   per one-record batch")
        print(f"load average: {os.getloadavg()}")
        if profile is not None:
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
