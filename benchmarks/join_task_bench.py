"""CPU cost of the stream–table joins in one task, without Spark.

What one Spark task does for ``join_bench.py``'s joins per micro-batch: a
:class:`~streamlib.runtime.task.Task` over real RocksDB stores processes an Arrow
batch of the orders and customer rows (``join_bench.make_data``: one order per ms, one
customer update per ``--update-every`` orders, 10% of them late) and commits. All rows
go to one task (the bench's two partitions' work). Reports CPU seconds per 100k orders
(``time.process_time``), which the machine's load disturbs far less than wall time.

    .venv/bin/python benchmarks/join_task_bench.py [--orders 100000] [--batches 1]
        [--grace 0,4000] [--repeat 3] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time

import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from join_bench import make_data, topology  # noqa: E402
from task_runs import task_cpu_seconds  # noqa: E402

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def input_batches(orders: list[tuple], updates: list[tuple], batches: int) -> list[pa.Table]:
    """The task's input rows, both topics in produce order, cut into ``batches`` by offsets."""
    tables = []
    for b in range(batches):
        parts = []
        for topic, rows in (("orders", orders), ("customers", updates)):
            lo, hi = len(rows) * b // batches, len(rows) * (b + 1) // batches
            chunk = rows[lo:hi]
            parts.append(pa.table({
                "topic": pa.array([topic] * len(chunk), pa.string()),
                "partition": pa.array([0] * len(chunk), pa.int32()),
                "offset": pa.array(range(lo, hi), pa.int64()),
                "timestamp": pa.array([r[2] for r in chunk], pa.int64()),
                "key": pa.array([r[0].encode() for r in chunk], pa.binary()),
                "value": pa.array([r[1].encode() for r in chunk], pa.binary()),
                "headers": pa.array([[]] * len(chunk), HEADERS),
            }))
        tables.append(pa.concat_tables(parts))
    return tables


def run(grace_ms: int, tables: list[pa.Table], work: str) -> tuple[float, int]:
    """CPU seconds for all batches of the join with ``grace_ms``, and the rows emitted."""
    return task_cpu_seconds(topology(grace_ms), f"join-task-bench-{grace_ms}", tables, work, "stores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=100_000)
    parser.add_argument("--customers", type=int, default=5_000)
    parser.add_argument("--update-every", type=int, default=10)
    parser.add_argument("--late", type=float, default=0.1)
    parser.add_argument("--delay", type=int, default=2_000)
    parser.add_argument("--batches", type=int, default=1)
    parser.add_argument("--grace", default="0,4000", help="grace periods in ms (0: the classic join)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the fastest is reported")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--profile", action="store_true", help="print the top functions by own time")
    args = parser.parse_args()
    orders, updates, late = make_data(args.orders, args.customers, args.update_every, args.late,
                                      args.delay, args.seed)
    tables = input_batches(orders, updates, args.batches)
    print(f"{len(orders):,} orders, {len(updates):,} customer rows ({late:,} late), {args.batches} batches, "
          f"one task, load {os.getloadavg()[0]:.1f}")
    for grace in (int(g) for g in args.grace.split(",")):
        times = []
        for _ in range(args.repeat):
            work = tempfile.mkdtemp(prefix="streamlib-join-task-bench-")
            try:
                if args.profile:
                    profile = cProfile.Profile()
                    seconds, emitted = profile.runcall(run, grace, tables, work)
                    pstats.Stats(profile).sort_stats("tottime").print_stats(25)
                else:
                    seconds, emitted = run(grace, tables, work)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            times.append(seconds)
        label = "classic join (grace 0)" if grace == 0 else f"grace join ({grace} ms)"
        print(f"{label:<26}{min(times) * 1e5 / len(orders):>7.3f} s CPU per 100k orders "
              f"(runs: {', '.join(f'{t:.3f}' for t in times)})  {emitted:,} rows emitted", flush=True)


if __name__ == "__main__":
    main()
