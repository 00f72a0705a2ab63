"""Windowed-count throughput: streamlib vs Spark's native windowed aggregation.

Input: ``--events`` events (default 2M) over 1,000 keys, 1,000 events per second of
event time, fixed seed; 1% of them are late (2-5 minutes behind). Four settings, each
run by both engines in ONE Spark session (``local[2]``, 2 shuffle partitions, RocksDB
state on both sides), split into ``--batches`` micro-batches:

- 1-minute tumbling and 5-minute windows advancing by 1 minute (hopping) counts,
- emit-final (streamlib: ``suppress(until_window_closes())``; Spark: ``append`` output
  mode) and emit-on-update (streamlib: the default, one update per window per commit;
  Spark: ``update`` output mode), both with 10 s of grace / watermark delay.

Spark's query is ``withWatermark(event_time, "10 seconds")`` + ``groupBy(window(...),
key).count()`` reading the events from Parquet files (``maxFilesPerTrigger=1``, one
file per micro-batch) into the no-op sink. streamlib reads the same events from a
2-partition topic of the embedded local log (keys partitioned by key) and writes every
emitted window to an output topic.

Before measuring, each engine runs the first setting once on ``--warmup-events`` events
of their own (``0`` skips it): otherwise the first setting measured pays the session's
one-time costs, Spark's JIT warm-up (4-5 s) on one side and the first start of
streamlib's Python processes (about 3 s) on the other, and its ratio says little.

``--reps N`` runs every setting N times, the engines alternating (Spark, streamlib,
Spark, ...), and ends with each setting's median ratio: on a 2-core machine one run's
ratio moves by about 10% from run to run, more than most changes.

    .venv/bin/python benchmarks/windowed_bench.py [--events 2000000] [--batches 10]
        [--settings tumbling-final,tumbling-update,hopping-final,hopping-update] [--warmup-events 100000]
        [--reps 1]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from streamlib import (Consumed, Materialized, Produced, Serdes, Streams, StreamsBuilder,  # noqa: E402
                       StreamsConfig, Suppressed, TimeWindows)
from streamlib.spark.session import get_or_create_session  # noqa: E402
from streamlib.topics import open_backend, records_to_arrow  # noqa: E402

INPUT_TOPIC = "windowed-bench-events"
PARTITIONS = 2
KEYS = 1_000
EVENTS_PER_SECOND = 1_000
LATE_FRACTION = 0.01
GRACE_S = 10
START_MS = 1_700_000_000_000 - 1_700_000_000_000 % 3_600_000   # on an hour: windows align
SETTINGS = {
    # name: (window size s, advance s, emit final)
    "tumbling-final": (60, 60, True),
    "tumbling-update": (60, 60, False),
    "hopping-final": (300, 60, True),
    "hopping-update": (300, 60, False),
}


def make_events(events: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(timestamps ms, key ids): in event-time order but 1% of them 2-5 minutes late."""
    rng = np.random.default_rng(seed)
    ts = START_MS + (np.arange(events, dtype=np.int64) * 1000) // EVENTS_PER_SECOND
    late = rng.random(events) < LATE_FRACTION
    ts[late] -= rng.integers(120_000, 300_000, int(late.sum()))
    return ts, rng.integers(0, KEYS, events)


def write_parquet(directory: str, ts: np.ndarray, keys: np.ndarray, files: int) -> None:
    os.makedirs(directory)
    names = np.array([f"sensor-{i}" for i in range(KEYS)], dtype=object)
    for i, part in enumerate(np.array_split(np.arange(len(ts)), files)):
        table = pa.table({"key": pa.array(names[keys[part]], pa.string()), "ts": pa.array(ts[part], pa.int64())})
        pq.write_table(table, os.path.join(directory, f"events-{i:04d}.parquet"))


def fill_topic(bootstrap: str, ts: np.ndarray, keys: np.ndarray) -> None:
    backend = open_backend(bootstrap)
    backend.create_topic(INPUT_TOPIC, partitions=PARTITIONS, exist_ok=True)
    names = [f"sensor-{i}".encode() for i in range(KEYS)]
    for p in range(PARTITIONS):
        rows = np.nonzero(keys % PARTITIONS == p)[0]
        backend.append(INPUT_TOPIC, p, records_to_arrow(
            [(names[keys[i]], b"1", int(ts[i]), ()) for i in rows]))
    backend.close()


def run_spark(spark, parquet_dir: str, checkpoint: str, size_s: int, advance_s: int,
              final: bool) -> tuple[float, int]:
    from pyspark.sql import functions as F

    events = (spark.readStream.schema("key string, ts long").option("maxFilesPerTrigger", 1).parquet(parquet_dir)
              .withColumn("event_time", F.timestamp_millis("ts"))
              .withWatermark("event_time", f"{GRACE_S} seconds"))
    window = (F.window("event_time", f"{size_s} seconds") if size_s == advance_s
              else F.window("event_time", f"{size_s} seconds", f"{advance_s} seconds"))
    query = (events.groupBy(window, "key").count().writeStream
             .outputMode("append" if final else "update").format("noop")
             .option("checkpointLocation", checkpoint).trigger(availableNow=True))
    start = time.perf_counter()
    handle = query.start()
    handle.awaitTermination()
    return time.perf_counter() - start, len(handle.recentProgress)


def build_topology(name: str, size_s: int, advance_s: int, final: bool):
    """The windowed count of one setting, written to the topic ``windowed-bench-<name>``."""
    builder = StreamsBuilder()
    windows = TimeWindows.of(size_s * 1000, grace=GRACE_S * 1000)
    if advance_s != size_s:
        windows = windows.advance_by(advance_s * 1000)
    counts = (builder.stream(INPUT_TOPIC, consumed=Consumed.with_(Serdes.string(), Serdes.string()))
              .group_by_key().windowed_by(windows).count(materialized=Materialized.as_("counts")))
    if final:
        counts = counts.suppress(Suppressed.until_window_closes())
    counts.to_stream().to(f"windowed-bench-{name}", produced=Produced.with_(
        Serdes.time_windowed(Serdes.string(), size_s * 1000), Serdes.long()))
    return builder.build()


def run_streamlib(spark, bootstrap: str, state_dir: str, name: str, size_s: int, advance_s: int, final: bool,
                  per_batch: int) -> tuple[float, dict, int]:
    config = StreamsConfig(application_id=f"windowed-bench-{name}", bootstrap=bootstrap, state_dir=state_dir,
                           num_partitions=PARTITIONS, max_records_per_batch=per_batch)
    app = Streams(build_topology(name, size_s, advance_s, final), config, spark=spark)
    start = time.perf_counter()
    app.process_available()
    elapsed = time.perf_counter() - start
    metrics = app.metrics()
    app.stop()
    backend = open_backend(bootstrap)
    emitted = sum(backend.end_offsets(f"windowed-bench-{name}").values())
    backend.close()
    return elapsed, metrics, emitted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--warmup-events", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="streamlib-windowed-bench-")
    bootstrap = f"local://{work}/log"
    ts, keys = make_events(args.events, args.seed)
    write_parquet(f"{work}/parquet", ts, keys, args.batches)
    fill_topic(bootstrap, ts, keys)
    spark = get_or_create_session("local[2]", "windowed-bench", {
        "spark.sql.shuffle.partitions": str(PARTITIONS),
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    per_batch = -(-args.events // args.batches)
    if args.warmup_events:
        warm_ts, warm_keys = make_events(args.warmup_events, args.seed + 1)
        write_parquet(f"{work}/warm-parquet", warm_ts, warm_keys, 2)
        fill_topic(f"local://{work}/warm-log", warm_ts, warm_keys)
        name = args.settings.split(",")[0]
        run_spark(spark, f"{work}/warm-parquet", f"{work}/warm-ckpt", *SETTINGS[name])
        run_streamlib(spark, f"local://{work}/warm-log", f"{work}/warm-state", name, *SETTINGS[name],
                      -(-args.warmup_events // 2))
    print(f"{args.events:,} events ({LATE_FRACTION:.0%} late), {KEYS:,} keys, {args.batches} micro-batches, "
          f"local[2], both engines warmed up on {args.warmup_events:,} events, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'setting':<17}{'engine':<11}{'seconds':>9}{'events/s':>11}{'vs spark':>9}  notes")
    ratios: dict[str, list[float]] = {}
    for rep in range(args.reps):
        for name in args.settings.split(","):
            size_s, advance_s, final = SETTINGS[name]
            run = name if rep == 0 else f"{name}-{rep}"   # its own checkpoint, application and output topic
            spark_s, spark_batches = run_spark(spark, f"{work}/parquet", f"{work}/ckpt-{run}", size_s, advance_s,
                                               final)
            print(f"{name:<17}{'spark':<11}{spark_s:>9.2f}{args.events / spark_s:>11,.0f}{'':>9}  "
                  f"{spark_batches} batches", flush=True)
            ours_s, metrics, emitted = run_streamlib(spark, bootstrap, f"{work}/state", run, size_s, advance_s,
                                                     final, per_batch)
            ratios.setdefault(name, []).append(spark_s / ours_s)
            print(f"{name:<17}{'streamlib':<11}{ours_s:>9.2f}{args.events / ours_s:>11,.0f}"
                  f"{spark_s / ours_s:>8.2f}x  {metrics['last_batch'] + 1} batches, {emitted:,} windows emitted, "
                  f"{metrics['dropped_records']:,} dropped, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    if args.reps > 1:
        print("median ratio (Spark's seconds / streamlib's) over "
              f"{args.reps} runs: " + ", ".join(f"{name} {statistics.median(r):.2f}x" for name, r in ratios.items()))
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
