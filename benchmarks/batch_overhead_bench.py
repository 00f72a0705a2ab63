"""Per-batch overhead: an empty batch and a one-record batch, Spark's own query vs streamlib.

Both run the wordcount in ONE Spark session (``local[2]``, 4 shuffle partitions, warm
JVM), started once; then, batch after batch, one input line is added and the query is
driven until it has processed it (``processAllAvailable``), timed from the append to
the batch's commit. An "empty" batch's line has no words (nothing reaches the count);
a "one-record" batch's line has one word (one key updated, one output record).

- ``spark``: Spark Structured Streaming's text-file source (one new file per batch),
  ``groupBy(word).count()`` on the RocksDB state store provider, the no-op sink.
- ``streamlib``: Kafka's WordCountDemo topology (split as Spark Column steps) on the
  embedded log; one produced record per batch; counts written to the output topic.

Prints the median and p90 seconds per batch, and Spark's own breakdown of the median
batch (``durationMs`` of the query progress: planning, addBatch, commits).

    .venv/bin/python benchmarks/batch_overhead_bench.py [--batches 15]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import functions as F  # noqa: E402

from common import bench_session  # noqa: E402
from streamlib import (Consumed, Materialized, Produced, Serdes, Streams, StreamsBuilder,  # noqa: E402
                       StreamsConfig)
from streamlib.topics import open_backend  # noqa: E402

PARTITIONS = 4
TOPIC = "lines"
LINES = {"empty": "", "one-record": "hello"}


def topology():
    b = StreamsBuilder()
    lines = b.stream(TOPIC, consumed=Consumed.with_(Serdes.string(), Serdes.string()))
    (lines.flat_map_values(F.split(F.lower(F.col("value")), r"\W+"))
     .filter(F.col("value") != "").select_key(F.col("value")).group_by_key()
     .count(materialized=Materialized.as_("counts")).to_stream()
     .to("counts-out", produced=Produced.with_(Serdes.string(), Serdes.long())))
    return b.build()


def timed_batches(query, add_line, line: str, batches: int) -> tuple[list[float], list[dict]]:
    """Seconds from adding ``line`` to the end of the batch that processed it."""
    times, progress = [], []
    for _ in range(batches):
        started = time.perf_counter()
        add_line(line)
        query.processAllAvailable()
        times.append(time.perf_counter() - started)
        progress.append(query.lastProgress or {})
    return times, progress


def spark_query(spark, work: str):
    files = f"{work}/files"
    os.makedirs(files)
    counter = [0]

    def add_line(line: str) -> None:
        counter[0] += 1
        tmp = f"{work}/tmp-{counter[0]}.txt"
        with open(tmp, "w") as f:
            f.write(line + "\n")
        os.rename(tmp, f"{files}/part-{counter[0]:05d}.txt")  # atomically visible

    words = (spark.readStream.format("text").load(files)
             .select(F.explode(F.split(F.lower(F.col("value")), r"\W+")).alias("word"))
             .where("word != ''"))
    query = (words.groupBy("word").count().writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", f"{work}/spark-checkpoint")
             .trigger(processingTime="0 seconds").start())
    return query, add_line, query.stop


def streamlib_query(spark, work: str):
    boot = f"local://{work}/log"
    backend = open_backend(boot)
    backend.create_topic(TOPIC, partitions=PARTITIONS)

    def add_line(line: str) -> None:
        backend.produce(TOPIC, key=None, value=line.encode(), timestamp=int(time.time() * 1000))
        backend.flush()

    app = Streams(topology(), StreamsConfig(application_id="overhead", bootstrap=boot,
                                            state_dir=f"{work}/state", commit_interval=timedelta(0)),
                  spark=spark)
    app.start()
    return app._query, add_line, app.stop


def breakdown(progress: list[dict], times: list[float]) -> str:
    median = sorted(range(len(times)), key=times.__getitem__)[len(times) // 2]
    durations = progress[median].get("durationMs", {})
    return ", ".join(f"{k}={v}" for k, v in sorted(durations.items()) if v)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--batches", type=int, default=15)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="batch-overhead-")
    spark = bench_session("batch-overhead", PARTITIONS)
    print(f"load average: {os.getloadavg()}")
    try:
        for name, make in (("spark", spark_query), ("streamlib", streamlib_query)):
            query, add_line, stop = make(spark, f"{work}/{name}")
            try:
                timed_batches(query, add_line, "warm up", 3)
                for kind, line in LINES.items():
                    times, progress = timed_batches(query, add_line, line, a.batches)
                    p90 = sorted(times)[int(0.9 * (len(times) - 1))]
                    print(f"{name:<10} {kind:<11} median {statistics.median(times):6.3f}s  "
                          f"p90 {p90:6.3f}s   [{breakdown(progress, times)}]", flush=True)
            finally:
                stop()
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
