"""Stream–table join throughput: streamlib's classic join (grace 0) and its join with a
grace period (late-update re-trigger) vs Spark's stream–static join, on the same data
in one Spark session.

Orders (one per ms, random customer of ``--customers``) and customer updates (one per
``--update-every`` orders, on top of one initial row per customer) in two 2-partition
topics keyed by customer, processed in one micro-batch (``--batches`` for more). ``--late`` of the
updates (10% by default) are produced late: after the updates of the next
``--delay`` ms, so they reach the join after orders they apply to, and the grace join
re-joins those orders. Spark's stream–static join reads the customers topic once as a
static DataFrame (latest row per customer) and writes to the no-op sink; streamlib
writes every result to an output topic.

    .venv/bin/python benchmarks/join_bench.py [--orders 100000] [--batches 1]
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from datetime import timedelta

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from streamlib import (Consumed, Joined, Produced, Serdes, Streams, StreamsBuilder,  # noqa: E402
                       StreamsConfig)
from streamlib.spark.session import get_or_create_session  # noqa: E402
from streamlib.topics import open_backend  # noqa: E402

PARTITIONS = 2
S = Serdes.string()


def make_data(orders: int, customers: int, update_every: int, late: float, delay: int,
              seed: int) -> tuple[list[tuple], list[tuple], int]:
    """(orders, customer updates in produce order, number of late updates); records are
    (key, value, timestamp)."""
    rng = random.Random(seed)
    order_rows = [(f"c{rng.randrange(customers)}", f"o{i}", i) for i in range(orders)]
    updates = [(f"c{j}", f"name{j}-v0", 0) for j in range(customers)]
    timed = []
    for n, ts in enumerate(range(update_every, orders, update_every)):
        row = (f"c{rng.randrange(customers)}", f"name-v{n + 1}", ts)
        is_late = rng.random() < late
        timed.append((ts + delay if is_late else ts, row))   # a late one is produced later
    timed.sort(key=lambda pair: pair[0])
    late_count = sum(1 for when, row in timed if when != row[2])
    return order_rows, updates + [row for _, row in timed], late_count


def fill(bootstrap: str, topic: str, rows: list[tuple]) -> None:
    backend = open_backend(bootstrap)
    backend.create_topic(topic, partitions=PARTITIONS, exist_ok=True)
    for key, value, ts in rows:
        backend.produce(topic, key=key.encode(), value=value.encode(), timestamp=ts)
    backend.close()


def topology(grace_ms: int):
    builder = StreamsBuilder()
    customers = builder.table("customers", consumed=Consumed.with_(S, S))
    joined = Joined.with_(S, S, S, grace=timedelta(milliseconds=grace_ms))
    (builder.stream("orders", consumed=Consumed.with_(S, S))
     .join(customers, lambda order, customer: f"{order}|{customer}", joined)
     .to(f"out-{grace_ms}", produced=Produced.with_(S, S)))
    return builder.build()


def run_streamlib(spark, bootstrap: str, work: str, grace_ms: int, per_batch: int) -> tuple[float, int, int]:
    """(seconds, results, corrections) of the join with ``grace_ms``."""
    config = StreamsConfig(application_id=f"join-bench-{grace_ms}", bootstrap=bootstrap,
                           state_dir=f"{work}/state-{grace_ms}", max_records_per_batch=per_batch)
    app = Streams(topology(grace_ms), config, spark=spark)
    start = time.perf_counter()
    app.process_available()
    elapsed = time.perf_counter() - start
    app.stop()
    backend = open_backend(bootstrap)
    results = corrections = 0
    for partition, end in backend.end_offsets(f"out-{grace_ms}").items():
        for record in backend.read(f"out-{grace_ms}", partition, 0, end):
            results += 1
            corrections += any(name == "streamlib.update" for name, _ in record.headers)
    backend.close()
    return elapsed, results, corrections


def run_spark(spark, bootstrap: str, work: str, per_batch: int) -> float:
    """Spark's stream–static join: orders (stream) with the latest row per customer."""
    from pyspark.sql import functions as F

    static = (spark.read.format("streamlib").option("bootstrap", bootstrap).option("topics", "customers")
              .load().groupBy("key").agg(F.max_by("value", F.struct("timestamp", "offset")).alias("customer"))
              .cache())
    static.count()
    orders = (spark.readStream.format("streamlib").option("bootstrap", bootstrap).option("topics", "orders")
              .option("maxRecordsPerTrigger", str(per_batch)).load())
    joined = orders.join(static, "key").select(
        "key", F.concat_ws("|", F.col("value").cast("string"), F.col("customer").cast("string")))
    start = time.perf_counter()
    handle = (joined.writeStream.format("noop").option("checkpointLocation", f"{work}/ckpt")
              .trigger(processingTime="0 seconds").start())
    handle.processAllAvailable()
    handle.stop()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=100_000)
    parser.add_argument("--customers", type=int, default=5_000)
    parser.add_argument("--update-every", type=int, default=10, help="one customer update per this many orders")
    parser.add_argument("--late", type=float, default=0.1, help="fraction of customer updates produced late")
    parser.add_argument("--delay", type=int, default=2_000, help="how late, in ms of event time")
    parser.add_argument("--batches", type=int, default=1,
                        help="micro-batches (split by offsets per topic: with more than one, initial "
                             "customer rows at time 0 may come after the grace and be dropped)")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="streamlib-join-bench-")
    bootstrap = f"local://{work}/log"
    orders, updates, late = make_data(args.orders, args.customers, args.update_every, args.late,
                                      args.delay, args.seed)
    fill(bootstrap, "orders", orders)
    fill(bootstrap, "customers", updates)
    per_batch = -(-(len(orders) + len(updates)) // args.batches)
    spark = get_or_create_session("local[2]", "join-bench", {
        "spark.sql.shuffle.partitions": str(PARTITIONS), "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    print(f"{len(orders):,} orders, {len(updates):,} customer rows ({late:,} late), "
          f"{PARTITIONS} partitions, ~{args.batches} micro-batches, local[2], load {os.getloadavg()[0]:.1f}")
    spark_s = run_spark(spark, bootstrap, work, per_batch)
    print(f"{'engine':<34}{'seconds':>9}{'orders/s':>11}{'vs spark':>10}{'results':>9}{'corrected':>10}")
    print(f"{'spark stream-static join':<34}{spark_s:>9.2f}{len(orders) / spark_s:>11,.0f}")
    timings = {}
    for label, grace in (("streamlib join, grace 0", 0), (f"streamlib join, grace {args.delay * 2} ms",
                                                          args.delay * 2)):
        seconds, results, corrected = run_streamlib(spark, bootstrap, work, grace, per_batch)
        timings[grace] = seconds
        if args.batches == 1:   # every customer has a row at 0: each order joins once, plus corrections
            assert results == len(orders) + corrected, (results, corrected)
        print(f"{label:<34}{seconds:>9.2f}{len(orders) / seconds:>11,.0f}{spark_s / seconds:>9.2f}x"
              f"{results:>9,}{corrected:>10,}")
    extra = timings[args.delay * 2] / timings[0] - 1
    print(f"grace join vs classic join: {extra:+.0%} time (versioned history, buffer, re-triggers)")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
