"""What every start of a streaming query pays for our Python source, before its first job.

Spark serves a Python streaming source from a fresh Python process per query
(``pyspark.sql.streaming.python_streaming_source_runner``, not forked from the daemon),
started with Spark's archives first on its ``PYTHONPATH``. This starts such processes
the same way and times, inside each, what it does before Spark can plan the first
batch: importing the runner module, importing ``streamlib.spark.source``, making the
reader from the options a streamlib application passes, its initial and latest offsets,
and the first batch's input partitions over a ``--records``-record, 4-partition log
(grouped as an application groups them: 5,000 records or more per read task).

Prints the median of ``--runs`` processes for each part and for the whole process
(Python's own start included). The processes run as Spark starts them for a session
streamlib made (``STREAMLIB_SPARK_SESSION`` set, so ``streamlib-spark-path.pth`` drops
Spark's archives); ``--zip`` leaves the variable out, so they import pyspark from the
archives, as any other session's processes do.

    .venv/bin/python benchmarks/source_runner_bench.py [--runs 7] [--records 200000] [--zip]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

PARTS = ("runner import", "source import", "reader", "offsets", "partitions")


def in_runner(bootstrap: str) -> None:
    """One runner process's steps, timed; prints them as JSON."""
    marks = [time.perf_counter()]
    import pyspark.sql.streaming.python_streaming_source_runner  # noqa: F401
    marks.append(time.perf_counter())
    from streamlib.spark.source import TopicDataSource
    marks.append(time.perf_counter())
    source = TopicDataSource({"bootstrap": bootstrap, "topics": "lines", "applicationId": "bench",
                              "backendConfig": "{}", "minRecordsPerPartition": "5000"})
    source.schema()
    reader = source.streamReader(None)
    marks.append(time.perf_counter())
    start, end = reader.initialOffset(), reader.latestOffset()
    marks.append(time.perf_counter())
    planned = reader.partitions(start, end)
    marks.append(time.perf_counter())
    if not planned:
        raise SystemExit("the first batch planned no input partitions")
    print(json.dumps([b - a for a, b in zip(marks, marks[1:])]))


def spark_pythonpath() -> str:
    """The archives Spark puts first on its Python processes' path (pip's pyspark)."""
    import pyspark

    lib = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
    return os.pathsep.join(sorted(glob.glob(os.path.join(lib, "*.zip"))) + [ROOT])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--zip", action="store_true", help="keep Spark's archives first on the path")
    a = p.parse_args()
    from streamlib.topics import open_backend

    work = tempfile.mkdtemp(prefix="runner-bench-")
    bootstrap = f"local://{work}/log"
    backend = open_backend(bootstrap)
    backend.create_topic("lines", partitions=4)
    line = b"word1 word2 word3 word4 word5 word6 word7 word8 word9 word10"
    for i in range(a.records):
        backend.produce("lines", key=None, value=line, timestamp=1_000 + i, partition=i % 4)
    backend.flush()
    backend.close()
    from _streamlib_spark_path import SESSION_VARIABLE

    env = {k: v for k, v in os.environ.items() if k != SESSION_VARIABLE}
    env["PYTHONPATH"] = spark_pythonpath()
    if not a.zip:
        env[SESSION_VARIABLE] = "1"
    command = [sys.executable, __file__, "--in-runner", bootstrap]
    parts, wholes = [], []
    for _ in range(a.runs):
        t = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"the runner process failed:\n{done.stderr}")
        wholes.append(time.perf_counter() - t)
        parts.append(json.loads(done.stdout.strip().splitlines()[-1]))
    for i, name in enumerate(PARTS):
        print(f"{name:<15}{statistics.median(run[i] for run in parts) * 1000:8.1f} ms")
    print(f"{'whole process':<15}{statistics.median(wholes) * 1000:8.1f} ms  (median of {a.runs})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--in-runner"]:
        in_runner(sys.argv[2])
    else:
        main()
