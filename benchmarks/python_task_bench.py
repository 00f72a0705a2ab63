"""What one Python task costs Spark: a job of one ``mapInArrow`` task over one row.

Two ways, each ``--jobs`` jobs after a warm-up, in sessions of one process
(``local[2]``, no UI; the job writes to the no-op sink):

- ``spark daemon``: Spark's own ``pyspark.daemon``, the function does nothing else;
- ``streamlib daemon``: ``spark.python.daemon.module=streamlib.spark.daemon`` (sessions
  streamlib makes), which sets quick ACKs on the worker's connection before each task
  reads it (PySpark 4.1/4.2; 4.3 offers no hook for it).

Prints the median and mean milliseconds per job.

    .venv/bin/python benchmarks/python_task_bench.py [--jobs 100]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402


def passthrough(batches):
    yield from batches


def job_times(daemon: str, function, jobs: int) -> list[float]:
    spark = (SparkSession.builder.master("local[2]").appName("python-task-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.python.daemon.module", daemon).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rows = spark.range(1).mapInArrow(function, "id long")
        times = []
        for i in range(10 + jobs):
            started = time.perf_counter()
            rows.write.format("noop").mode("overwrite").save()
            if i >= 10:
                times.append(time.perf_counter() - started)
        return times
    finally:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.1f}")
    for name, daemon, function in (("spark daemon", "pyspark.daemon", passthrough),
                                   ("streamlib daemon", "streamlib.spark.daemon", passthrough)):
        times = job_times(daemon, function, args.jobs)
        print(f"{name:<21} median {statistics.median(times) * 1000:6.1f} ms  mean {statistics.mean(times) * 1000:6.1f} ms",
              flush=True)
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
