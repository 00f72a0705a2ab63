"""What Spark 4's per-row Arrow size check costs: rows with streamlib's stage columns
handed to a Python task that keeps none of them (``mapInArrow``), with
``spark.sql.execution.arrow.maxBytesPerBatch`` at Spark's default (checked after every
row) and at Int.MaxValue (what streamlib sets on its query's session; see
``streamlib.spark.lower.ARROW_MAX_BYTES``).

``.venv/bin/python benchmarks/arrow_handoff_bench.py [--rows 2000000] [--rounds 3]``
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from pyspark.sql import functions as F

from common import bench_session
from streamlib.spark.arrow import HEADERS_DDL
from streamlib.spark.lower import ARROW_MAX_BYTES

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def keep_nothing(batches):
    for batch in batches:
        yield batch.slice(0, 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spark = bench_session("arrow-handoff-bench", partitions=1)
    rows = spark.range(args.rows, numPartitions=1).select(
        F.lit("topic").alias("topic"), F.lit(0).alias("partition"), F.col("id").alias("offset"),
        F.col("id").alias("timestamp"), F.col("id").cast("string").cast("binary").alias("key"),
        F.lit("a value of some twenty bytes").cast("binary").alias("value"),
        F.array().cast(HEADERS_DDL).alias("headers")).cache()
    rows.count()
    key, unchecked = ARROW_MAX_BYTES
    default = spark.conf.get(key)
    times: dict[str, list[float]] = {default: [], unchecked: []}
    for _ in range(args.rounds):
        for setting in times:
            spark.conf.set(key, setting)
            started = time.perf_counter()
            rows.mapInArrow(keep_nothing, rows.schema).count()
            times[setting].append(time.perf_counter() - started)
    print(f"{args.rows:,} rows to one Python task, median of {args.rounds}, load {os.getloadavg()[0]:.1f}")
    for setting, seconds in times.items():
        median = statistics.median(seconds)
        print(f"  {key}={setting:>12}: {median:.2f} s ({args.rows / median:,.0f} rows/s)")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
