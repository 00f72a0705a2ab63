"""End-to-end latency: produce -> output-topic record, streamlib vs Spark's own query.

A producer writes ``--rate`` records/s (unique keys, value "1") for ``--seconds`` into a
4-partition topic of the embedded log while the application counts records per key
with a processing-time trigger of ``--interval-ms``; a reader polls the output topic
every 10 ms and notes when each key first appears. Latency = first seen - produced
(wall clock, same process). Prints p50/p90/p99/max per engine.

- ``streamlib``: ``stream("in").group_by_key().count().to_stream().to("out")`` run by
  ``Streams.start()`` with ``commit_interval`` = the interval.
- ``spark``: what a Spark user writes by hand on the same trigger: the topic read
  through the ``streamlib`` data source, ``groupBy(key).count()`` (RocksDB state store
  provider), update mode, each batch's updates appended to another topic with the
  ``streamlib`` sink in ``foreachBatch`` (the sink has no streaming update mode).
- ``spark-rate`` (``--engines``): Spark with no Python worker at all: its rate source,
  the same count, ``foreachBatch`` noting when each key comes out.

Both run in one Spark session (``local[2]``), one after the other, after a warm-up.

    .venv/bin/python benchmarks/latency_bench.py [--rate 5000] [--seconds 20] [--interval-ms 200 1000]
        [--engines spark streamlib spark-rate]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from datetime import timedelta
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import functions as F  # noqa: E402

from common import bench_session  # noqa: E402
from streamlib import (Consumed, Materialized, Produced, Serdes, Streams, StreamsBuilder,  # noqa: E402
                       StreamsConfig)
from streamlib.topics import open_backend  # noqa: E402

PARTITIONS = 4
WARM_UP_SECONDS = 10
#: How long the warm-up may take to come out: a loaded machine needs minutes for the
#: first batches (JVM code generation, Python workers, stores opening).
WARM_UP_DRAIN_SECONDS = 300
WARM_UP_ATTEMPTS = 4


def percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


def measure(boot: str, topic_in: str, topic_out: str, rate: int, seconds: float,
            drain: float = 60, alive: Callable[[], bool] = lambda: True) -> list[float]:
    """Produce at ``rate`` for ``seconds``; latencies (ms) of the keys seen in ``topic_out``
    within ``drain`` seconds after the last one."""
    producer = open_backend(boot)
    sent: dict[str, float] = {}
    seen: dict[str, float] = {}
    done = threading.Event()

    def reader() -> None:
        log = open_backend(boot)
        pos = {p: log.end_offsets(topic_out)[p] for p in range(PARTITIONS)}
        while not done.is_set():
            for part, end in log.end_offsets(topic_out).items():
                if end > pos[part]:
                    now = time.time()
                    for record in log.read(topic_out, part, pos[part], end):
                        seen.setdefault(record.key.decode(), now)
                    pos[part] = end
            time.sleep(0.01)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    start = time.time()
    i = 0
    while time.time() - start < seconds:
        # Produce in 10 ms slices so that the producer keeps the rate on a busy machine.
        due = int((time.time() - start) * rate)
        while i < due:
            key = f"{topic_in}-{i}"
            now = time.time()
            producer.produce(topic_in, key=key.encode(), value=b"1", timestamp=int(now * 1000))
            sent[key] = now
            i += 1
        producer.flush()
        time.sleep(0.01)
    deadline = time.time() + drain
    while time.time() < deadline and len(seen) < len(sent) and alive():
        time.sleep(0.1)
    done.set()
    thread.join()
    lost = len(sent) - len(seen)
    if lost:
        print(f"  ({lost} of {len(sent)} records not seen)")
    return sorted((seen[k] - sent[k]) * 1000 for k in sent if k in seen)


def warm_up(boot: str, topic_in: str, topic_out: str, rate: int, query: Callable[[], Any],
            restart: Callable[[], None]) -> None:
    """Produce for WARM_UP_SECONDS and wait until it all came out; a query that died
    meanwhile (on a loaded machine Spark's Python workers may miss their 10 s to
    connect back) is restarted from its checkpoint once."""
    for attempt in range(1, WARM_UP_ATTEMPTS + 1):
        measure(boot, topic_in, topic_out, rate, WARM_UP_SECONDS, drain=WARM_UP_DRAIN_SECONDS,
                alive=lambda: query().isActive)
        if query().isActive:
            return
        error = str(query().exception()).splitlines()[0][:200]
        print(f"  (the query died during the warm-up: {error})", flush=True)
        if attempt < WARM_UP_ATTEMPTS:
            restart()
    raise RuntimeError(f"the query died {WARM_UP_ATTEMPTS} times during the warm-up")


def print_batches(name: str, progress: list[dict], first: int) -> None:
    """Median phase durations (ms) of the batches with input since ``first``."""
    batches = [p for p in progress[first:] if p.get("numInputRows")]
    if not batches:
        return
    phases = sorted({k for p in batches for k in p["durationMs"]})
    medians = {k: statistics.median(p["durationMs"].get(k, 0) for p in batches) for k in phases}
    print(f"  {name}: {len(batches)} batches, median ms " + ", ".join(f"{k} {v:.0f}" for k, v in medians.items()))


def run_streamlib(spark, boot: str, work: str, interval_ms: int, rate: int, seconds: float) -> list[float]:
    builder = StreamsBuilder()
    (builder.stream("in-sl", consumed=Consumed.with_(Serdes.string(), Serdes.string()))
     .group_by_key().count(materialized=Materialized.as_("c")).to_stream()
     .to("out-sl", produced=Produced.with_(Serdes.string(), Serdes.long())))
    config = StreamsConfig(application_id=f"latency{interval_ms}", bootstrap=boot,
                           state_dir=f"{work}/state", commit_interval=timedelta(milliseconds=interval_ms))
    app = Streams(builder.build(), config, spark=spark)
    app.start()

    def restart() -> None:
        app.stop()
        app.start()

    try:
        warm_up(boot, "in-sl", "out-sl", rate, lambda: app._query, restart)
        first = len(app._query.recentProgress)
        lat = measure(boot, "in-sl", "out-sl", rate, seconds)
        print_batches("streamlib", app._query.recentProgress, first)
        return lat
    finally:
        app.stop()


def run_spark(spark, boot: str, work: str, interval_ms: int, rate: int, seconds: float) -> list[float]:
    counts = (spark.readStream.format("streamlib").option("bootstrap", boot).option("topics", "in-sp")
              .load().groupBy("key").count()
              .select("key", F.col("count").cast("string").cast("binary").alias("value")))

    def write(batch, batch_id: int) -> None:
        # The streamlib sink has no update mode; each batch's updated counts are
        # appended to the topic with a batch write, as a Spark user would.
        (batch.write.format("streamlib").option("bootstrap", boot).option("topic", "out-sp")
         .mode("append").save())

    writer = (counts.writeStream.outputMode("update").foreachBatch(write)
              .option("checkpointLocation", f"{work}/spark-checkpoint")
              .trigger(processingTime=f"{interval_ms} milliseconds"))
    running = [writer.start()]

    def restart() -> None:
        running[0].stop()
        running[0] = writer.start()

    try:
        warm_up(boot, "in-sp", "out-sp", rate, lambda: running[0], restart)
        query = running[0]
        first = len(query.recentProgress)
        lat = measure(boot, "in-sp", "out-sp", rate, seconds)
        print_batches("spark", query.recentProgress, first)
        return lat
    finally:
        running[0].stop()


def run_spark_rate(spark, boot: str, work: str, interval_ms: int, rate: int, seconds: float) -> list[float]:
    """Spark alone, no Python source: the rate source's rows (unique keys, each with the
    time Spark generated it), ``groupBy(key).count()``, update mode; ``foreachBatch``
    notes when each key's count comes out. No Python worker has to start, so this one
    also runs where Spark's Python workers miss their 10 s to connect back."""
    seen: dict[int, float] = {}
    made: dict[int, float] = {}

    def note(batch, batch_id: int) -> None:
        now = time.time()
        for row in batch.collect():
            seen.setdefault(row["key"], now)
            made.setdefault(row["key"], row["made"])

    counts = (spark.readStream.format("rate").option("rowsPerSecond", rate).load()
              .groupBy(F.col("value").alias("key"))
              .agg(F.count("*").alias("count"), F.min(F.unix_micros("timestamp")).alias("made")))
    query = (counts.writeStream.outputMode("update").foreachBatch(note)
             .option("checkpointLocation", f"{work}/spark-rate-checkpoint")
             .trigger(processingTime=f"{interval_ms} milliseconds").start())
    try:
        deadline = time.time() + WARM_UP_DRAIN_SECONDS
        while len(seen) < WARM_UP_SECONDS * rate and time.time() < deadline and query.isActive:
            time.sleep(0.5)
        first, start = len(query.recentProgress), time.time()
        time.sleep(seconds)
        # Rows come out in the order made: once a row made after the window is out,
        # every row of the window is.
        deadline = time.time() + 60
        while time.time() < deadline and max(made.values(), default=0) / 1e6 <= start + seconds:
            time.sleep(0.1)
        print_batches("spark-rate", query.recentProgress, first)
        return sorted((seen[k] - made[k] / 1e6) * 1000 for k in list(made)
                      if start <= made[k] / 1e6 <= start + seconds)
    finally:
        query.stop()


ENGINES = {"spark": run_spark, "streamlib": run_streamlib, "spark-rate": run_spark_rate}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rate", type=int, default=5000)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--interval-ms", type=int, nargs="+", default=[200, 1000])
    p.add_argument("--engines", nargs="+", choices=sorted(ENGINES), default=["spark", "streamlib"])
    a = p.parse_args()
    spark = bench_session("latency-bench", PARTITIONS)
    print(f"rate {a.rate}/s for {a.seconds:g} s; load average: {os.getloadavg()}")
    try:
        for interval in a.interval_ms:
            for name in a.engines:
                run = ENGINES[name]
                work = tempfile.mkdtemp(prefix="latency-")
                boot = f"local://{work}/log"
                backend = open_backend(boot)
                for topic in ("in-sl", "out-sl", "in-sp", "out-sp"):
                    backend.create_topic(topic, partitions=PARTITIONS)
                try:
                    lat = run(spark, boot, work, interval, a.rate, a.seconds)
                except RuntimeError as exc:   # this engine's query kept dying: go on with the next
                    print(f"trigger {interval:>5} ms  {name:<10} no result: {exc}", flush=True)
                    continue
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                if lat:
                    print(f"trigger {interval:>5} ms  {name:<10} p50 {percentile(lat, .5):7.0f} ms  "
                          f"p90 {percentile(lat, .9):7.0f} ms  p99 {percentile(lat, .99):7.0f} ms  "
                          f"max {lat[-1]:7.0f} ms  (n={len(lat)})", flush=True)
    finally:
        spark.stop()
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
