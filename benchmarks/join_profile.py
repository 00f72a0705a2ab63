"""Where the stream–table joins' time goes, stage by stage, against Spark's stream–static join.

Runs ``join_bench.py``'s engines one after the other in one Spark session (UI on, for
its REST API), on ``join_bench``'s data in one micro-batch, and prints for each run its
wall time, when its jobs started after the run's start and each stage (span, tasks,
records, every task's start and duration): ``batch_profile.report``. Engines: ``spark``
(the stream–static join into the no-op sink), ``classic`` (streamlib, grace 0) and
``grace`` (grace ``2 * --delay``). Name one twice to see a warm run.

    .venv/bin/python benchmarks/join_profile.py [--engines spark,spark,classic,classic,grace,grace]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from batch_profile import Rest, report  # noqa: E402
from join_bench import PARTITIONS, fill, make_data, run_spark, topology  # noqa: E402
from streamlib import Streams, StreamsConfig  # noqa: E402
from streamlib.spark.session import get_or_create_session  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="spark,spark,classic,classic,grace,grace")
    parser.add_argument("--orders", type=int, default=100_000)
    parser.add_argument("--customers", type=int, default=5_000)
    parser.add_argument("--delay", type=int, default=2_000)
    parser.add_argument("--explain", action="store_true", help="print streamlib's and Spark's plans")
    args = parser.parse_args()
    engines = args.engines.split(",")
    unknown = set(engines) - {"spark", "classic", "grace"}
    if unknown:
        parser.error(f"unknown engines {sorted(unknown)}")
    work = tempfile.mkdtemp(prefix="join-profile-")
    bootstrap = f"local://{work}/log"
    orders, updates, _ = make_data(args.orders, args.customers, 10, 0.1, args.delay, 42)
    fill(bootstrap, "orders", orders)
    fill(bootstrap, "customers", updates)
    per_batch = len(orders) + len(updates)
    spark = get_or_create_session("local[2]", "join-profile", {
        "spark.sql.shuffle.partitions": str(PARTITIONS), "spark.ui.enabled": "true",
        "spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    rest = Rest(spark)
    for n, engine in enumerate(engines):
        before = rest.job_ids()
        started = time.time()
        if engine == "spark":
            elapsed = run_spark(spark, bootstrap, f"{work}/spark{n}", per_batch)
            started = time.time() - elapsed   # (its static side is read before the timed part)
        else:
            grace = 0 if engine == "classic" else 2 * args.delay
            config = StreamsConfig(application_id=f"join-profile-{n}", bootstrap=bootstrap,
                                   state_dir=f"{work}/state{n}", max_records_per_batch=per_batch)
            app = Streams(topology(grace), config, spark=spark)
            app.process_available()
            elapsed = time.time() - started
            if args.explain:
                print(app.explain())
            app.stop()
        time.sleep(0.5)   # the status store takes the job's end a moment later
        report(rest, engine, started, elapsed, before)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
