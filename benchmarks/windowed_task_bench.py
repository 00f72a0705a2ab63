"""Per-record CPU cost of the windowed counts in one task, without Spark.

What one Spark task does for a windowed count per micro-batch: a
:class:`~streamlib.runtime.task.Task` over real RocksDB stores processes an Arrow
batch of input rows and commits. The events are those of ``windowed_bench.py`` (1,000
keys, 1,000 events/s of event time, 1% 2-5 minutes late), one partition's share.
Reports CPU microseconds per input record (``time.process_time``), so the number is
less sensitive to the machine's load than wall time.

    .venv/bin/python benchmarks/windowed_task_bench.py [--events 100000] [--batches 10]
        [--settings tumbling-final,...] [--profile]
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

import numpy as np
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from task_runs import task_cpu_seconds  # noqa: E402
from windowed_bench import INPUT_TOPIC, KEYS, SETTINGS, build_topology, make_events  # noqa: E402


def input_batches(events: int, batches: int, seed: int) -> list[pa.Table]:
    """Rows of the task's input (topic, partition, offset, timestamp, key, value, headers)."""
    ts, keys = make_events(events, seed)
    names = np.array([f"sensor-{i}".encode() for i in range(KEYS)], dtype=object)
    tables = []
    for part in np.array_split(np.arange(events), batches):
        n = len(part)
        tables.append(pa.table({
            "topic": pa.array([INPUT_TOPIC] * n, pa.string()),
            "partition": pa.array(np.zeros(n, dtype=np.int32)),
            "offset": pa.array(part.astype(np.int64)),
            "timestamp": pa.array(ts[part]),
            "key": pa.array(names[keys[part]], pa.binary()),
            "value": pa.array([b"1"] * n, pa.binary()),
            "headers": pa.array([[]] * n, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        }))
    return tables


def run(name: str, tables: list[pa.Table], work: str) -> tuple[float, int]:
    """CPU seconds for all batches of ``name``, and the number of emitted rows."""
    size_s, advance_s, final = SETTINGS[name]
    return task_cpu_seconds(build_topology(name, size_s, advance_s, final), f"task-bench-{name}", tables, work,
                            name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--profile", action="store_true", help="print the top functions by own time")
    args = parser.parse_args()
    tables = input_batches(args.events, args.batches, args.seed)
    print(f"{args.events:,} events in {args.batches} batches, one task, load {os.getloadavg()[0]:.1f}")
    for name in args.settings.split(","):
        work = tempfile.mkdtemp(prefix="streamlib-task-bench-")
        try:
            if args.profile:
                profile = cProfile.Profile()
                seconds, emitted = profile.runcall(run, name, tables, work)
                pstats.Stats(profile).sort_stats("tottime").print_stats(25)
            else:
                seconds, emitted = run(name, tables, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"{name:<17}{seconds * 1e6 / args.events:>8.1f} us CPU/record  {emitted:,} rows emitted",
              flush=True)


if __name__ == "__main__":
    main()
