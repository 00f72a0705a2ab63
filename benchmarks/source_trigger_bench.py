"""What one trigger of the ``streamlib`` source costs its runner: ``latestOffset`` and
``partitions``, in this process, as Spark's streaming source runner calls them per
micro-batch (log epochs, batch cuts by processing order, the divergence check).

Writes the side-by-side wordcount's input (``--words``, 4 partitions) and times 21
triggers of ``maxRecordsPerTrigger`` = a twentieth of it, three passes after a warm
one; prints the median trigger and the sum of the per-trigger medians.

    .venv/bin/python benchmarks/source_trigger_bench.py [--words 500000]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from streamlib.spark.source import SourceOptions, TopicStreamReader  # noqa: E402
from wc_side_by_side import TOPIC, make_lines, write_input  # noqa: E402

BATCHES = 20


def triggers(options: dict) -> list[float]:
    reader = TopicStreamReader(SourceOptions.parse(options))
    start, spent = reader.initialOffset(), []
    for _ in range(BATCHES + 1):
        t = time.perf_counter()
        end = reader.latestOffset()
        reader.partitions(start, end)
        spent.append(time.perf_counter() - t)
        start = end
    return spent


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--words", type=int, default=500_000)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="source-trigger-")
    lines = make_lines(a.words)
    bootstrap, _ = write_input(work, lines, 1)
    options = {"bootstrap": bootstrap, "topics": TOPIC, "maxRecordsPerTrigger": str(-(-len(lines) // BATCHES)),
               "applicationId": "bench", "minRecordsPerPartition": "5000"}
    triggers(options)
    per_trigger = [statistics.median(x) for x in zip(*(triggers(options) for _ in range(3)))]
    print(f"median trigger {statistics.median(per_trigger) * 1000:.2f} ms, "
          f"sum {sum(per_trigger) * 1000:.1f} ms over {len(per_trigger)} triggers")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
