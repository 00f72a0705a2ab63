"""Where the side-by-side wordcount's time goes, per part of a micro-batch.

Runs ``spark-src`` (Spark's word count on streamlib's data source) and ``streamlib``
(the Python split) of ``wc_side_by_side.py`` in a session made the way that script
makes it (``--streamlib-session``: made by ``get_or_create_session`` instead), in one
and in ``--batches`` micro-batches, and prints for each run: its wall time, the sum
over its batches of each phase Spark reports (``latestOffset``, ``queryPlanning``,
``addBatch``, ``walCommit``, ``commitOffsets``, ``triggerExecution``), the time before
its first trigger and after its last, and for streamlib, inside ``addBatch``, the
driver's own time around the batch's Spark jobs (the ``foreachBatch`` call less
``BatchPlan.run``).

For A/B runs of two checkouts: copy this file into the other checkout's ``benchmarks/``
and run both, alternately, from their own roots with their own ``.venv``.

    .venv/bin/python benchmarks/batch_split_bench.py [--words 2000000] [--batches 20] [--reps 2]
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql.streaming import StreamingQueryListener  # noqa: E402

from common import bench_session  # noqa: E402
from streamlib import StreamsConfig  # noqa: E402
from wc_side_by_side import (PARTITIONS, TOPIC, make_lines, run_streamlib, spark_count, spark_words,  # noqa: E402
                             topology, write_input)

PHASES = ("latestOffset", "queryPlanning", "addBatch", "walCommit", "commitOffsets", "triggerExecution")


class Phases(StreamingQueryListener):
    """Every progress report's phase durations and start time, per query run id."""

    def __init__(self):
        self.reports = collections.defaultdict(list)

    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        p = event.progress
        self.reports[str(p.runId)].append((p.timestamp, dict(p.durationMs), p.numInputRows))

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        pass


class Timed:
    """Seconds spent in some methods (wrapped in place), summed per name."""

    def __init__(self):
        self.spent = collections.defaultdict(float)

    def wrap(self, owner, name, label):
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.spent[label] += time.perf_counter() - t
        setattr(owner, name, timed)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--words", type=int, default=2_000_000)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--engines", default="src,py")
    p.add_argument("--streamlib-session", action="store_true")
    p.add_argument("--variants", default="as-is",
                   help="as-is, or marked,unmarked: run each engine with streamlib's Python processes "
                        "marked as streamlib's and not (see mark_streamlib_processes), interleaved")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="batch-split-")
    lines = make_lines(a.words)
    boot, _ = write_input(work, lines, 1)
    per = -(-len(lines) // a.batches)
    if a.streamlib_session:
        from common import ROCKSDB_PROVIDER
        from streamlib.spark.session import get_or_create_session, register_data_sources
        spark = get_or_create_session(conf={"spark.sql.shuffle.partitions": str(PARTITIONS),
                                            "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER})
        register_data_sources(spark)
    else:
        spark = bench_session("batch-split", PARTITIONS)
    phases = Phases()
    spark.streams.addListener(phases)
    from streamlib.app import Streams
    from streamlib.spark.compiler import BatchPlan
    timed = Timed()
    timed.wrap(Streams, "_run_batch", "foreachBatch")
    timed.wrap(BatchPlan, "run", "jobs")
    n = [0]

    def src(batches):
        r = spark.readStream.format("streamlib").option("bootstrap", boot).option("topics", TOPIC)
        if batches > 1:
            r = r.option("maxRecordsPerTrigger", str(per))
        q = spark_count(spark_words(r.load()), f"{work}/c{n[0]}")
        if batches > 1:   # as wc_side_by_side.py: the source has no admission control for availableNow
            q = q.trigger(processingTime="0 seconds").start()
            q.processAllAvailable()
            q.stop()
        else:
            q = q.trigger(availableNow=True).start()
            q.awaitTermination()

    def py(batches):
        config = StreamsConfig(application_id=f"split{n[0]}", bootstrap=boot, state_dir=f"{work}/s{n[0]}",
                               checkpoint_location=f"{work}/c{n[0]}",
                               max_records_per_batch=per if batches > 1 else None)
        run_streamlib(spark, topology(False), config, a.words)

    engines = {"src": src, "py": py}
    from streamlib.spark import session
    mark = getattr(session, "mark_streamlib_processes", None)

    def use(variant):
        if variant == "as-is":
            return
        session.mark_streamlib_processes = mark if variant == "marked" else (lambda spark: None)
        spark.sparkContext.environment.pop("STREAMLIB_SPARK_SESSION", None)
        session.register_data_sources(spark)
    src(1)   # warm the JVM and the planner
    print(f"{'run':<20}{'wall':>7}{'start':>7}{'end':>7}" + "".join(f"{ph[:9]:>10}" for ph in PHASES)
          + f"{'fbDriver':>9}{'jobs':>7}  batches", flush=True)
    for batches in (1, a.batches):
        for engine in a.engines.split(","):
            for _, variant in [(r, v) for r in range(a.reps) for v in a.variants.split(",")]:
                use(variant)
                n[0] += 1
                before = dict(timed.spent)
                t0, wall0 = time.perf_counter(), time.time()
                engines[engine](batches)
                wall, t1 = time.perf_counter() - t0, time.time()
                time.sleep(2.0)   # the listener bus reports a moment later
                reports = [x for r in phases.reports.values() for x in r if _stamp(x[0]) >= wall0 - 0.5
                           and (x[2] > 0 or x[1].get("addBatch", 0) > 0)]
                total = {ph: sum(d.get(ph, 0) for _, d, _ in reports) / 1000 for ph in PHASES}
                stamps = sorted(_stamp(ts) for ts, _, _ in reports)
                first = stamps[0] - wall0 if stamps else float("nan")
                tail = t1 - (stamps[-1] + max(d.get("triggerExecution", 0) for _, d, _ in reports) / 1000
                             ) if stamps else float("nan")
                fb = timed.spent["foreachBatch"] - before.get("foreachBatch", 0)
                jobs = timed.spent["jobs"] - before.get("jobs", 0)
                print(f"{engine + ' x' + str(batches) + ('' if variant == 'as-is' else ' ' + variant):<20}{wall:7.2f}{first:7.2f}{tail:7.2f}"
                      + "".join(f"{total[ph]:10.2f}" for ph in PHASES)
                      + f"{fb - jobs:9.2f}{jobs:7.2f}  {len(reports)}", flush=True)
    spark.stop()


def _stamp(iso: str) -> float:
    import datetime
    return datetime.datetime.strptime(iso.replace("Z", ""), "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


if __name__ == "__main__":
    main()
