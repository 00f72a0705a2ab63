"""Interactive queries on a running application holding 1M keys, while it processes.

A count per key over 1M distinct keys (4 store partitions, embedded log; each key
appended to the partition the default partitioner gives it, as a producer would). Once the
store holds every key, a feeder keeps appending updates of random keys (so batches keep
committing and the query replicas keep applying them) while this measures, on the
driver: point lookups (``app.store().get``, p50/p99/max), range scans of 1000 keys and
one full scan (keys/s); then ``N`` concurrent HTTP clients (``--clients``, in
``--client-procs`` processes of their own so they do not share the application's GIL)
each making ``--client-requests`` point lookups on the endpoint (a new connection per
request unless ``--keep-alive``), p50/p99/max and the CPU per request of the endpoint's
threads, the application's process and the clients (``query_http_bench.measure``); then
``app.table()`` and SQL aggregates over the 1M keys (Spark tasks read the store copies).

    .venv/bin/python benchmarks/query_bench.py [--keys 1000000] [--lookups 20000]
        [--clients 50] [--client-requests 20] [--client-procs 2] [--keep-alive]
        [--client http.client|raw] [--rate R [R ...]] [--http-only]
        [--switch-interval S] [--trace] [--pollers N] [--spark-nice N]

``--rate R``: the HTTP clients in an open loop, ``R`` lookups/s together on a schedule,
latency counted from each lookup's scheduled send (``query_http_bench.py``; 0: the
closed loop; several: one after another). ``--http-only``: only the HTTP clients
(no lookups, scans or tables on the driver). ``--trace``: where the lookups over
20 ms spent their time (``query_trace.py``, debug only); ``--pollers N``: the endpoint's
polling threads.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time

import numpy as np
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from streamlib import Consumed, Materialized, Serdes, Streams, StreamsBuilder, StreamsConfig  # noqa: E402
from streamlib.spark.session import get_or_create_session  # noqa: E402
from streamlib.topics import open_backend  # noqa: E402
from streamlib.topics.base import APPEND_SCHEMA  # noqa: E402
from streamlib.topics.partitioner import partition_array  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import query_http_bench  # noqa: E402
from renice import renice_children  # noqa: E402

PARTITIONS = 4


def key(i: int) -> str:
    return f"key{i:07d}"


def append_keyed(backend, keys: list[str]) -> None:
    """Append records of these keys, each to the partition a producer's default
    partitioner puts it in (the store then holds each key in that partition)."""
    parts = partition_array(pa.array([k.encode() for k in keys], pa.binary()), PARTITIONS)
    for p in range(PARTITIONS):
        append(backend, [k for k, q in zip(keys, parts) if q == p], p)


def append(backend, keys: list[str], partition: int) -> None:
    n = len(keys)
    table = pa.table([pa.array(np.zeros(n, dtype=np.int64)), pa.array([k.encode() for k in keys], pa.binary()),
                      pa.array([b"x"] * n, pa.binary()),
                      pa.array([[]] * n, APPEND_SCHEMA.field("headers").type)], schema=APPEND_SCHEMA)
    backend.append("events", partition, table)


def percentile(samples: list[float], q: float) -> float:
    return float(np.percentile(np.array(samples), q))


def concurrent_lookups(port: int, args: argparse.Namespace, queries) -> None:
    """``--clients`` HTTP clients in processes of their own (spawned: never fork a
    process running a JVM), the server's CPU per request measured apart."""
    clients = argparse.Namespace(keys=args.keys, clients=args.clients, requests=args.client_requests,
                                 client_procs=args.client_procs, kind="get", page=1, keep_alive=args.keep_alive,
                                 client=args.client, rate=args.rate, trace=args.trace)
    for one in query_http_bench.each_rate(clients):
        print("HTTP point lookups, " + query_http_bench.measure(port, one, "while the application runs", queries),
              flush=True)


def driver_reads(view, args: argparse.Namespace) -> None:
    """Point lookups, range scans and a full scan on the driver (``app.store``)."""
    rng = random.Random(2)
    latencies = []
    t0 = time.perf_counter()
    for _ in range(args.lookups):
        k = key(rng.randrange(args.keys))
        t = time.perf_counter()
        value = view.get(k)
        latencies.append((time.perf_counter() - t) * 1000)
        assert value is not None and value >= 1
    lookup_seconds = time.perf_counter() - t0
    ms = [round(percentile(latencies, q), 3) for q in (50, 99)]
    print(f"point lookups: {args.lookups} in {lookup_seconds:.1f}s ({args.lookups / lookup_seconds:,.0f}/s); "
          f"p50 {ms[0]} ms, p99 {ms[1]} ms, max {max(latencies):.1f} ms")

    scanned, t0 = 0, time.perf_counter()
    for _ in range(200):
        lo = rng.randrange(args.keys - 1000)
        scanned += sum(1 for _ in view.range(key(lo), key(lo + 999)))
    seconds = time.perf_counter() - t0
    print(f"range scans of 1000 keys: {200 / seconds:,.0f} scans/s, {scanned / seconds:,.0f} keys/s")
    t0 = time.perf_counter()
    total = sum(1 for _ in view.all())
    seconds = time.perf_counter() - t0
    print(f"full scan: {total:,} keys in {seconds:.2f}s ({total / seconds:,.0f} keys/s)")


def tables(app, spark, args: argparse.Namespace) -> None:
    """``app.table()`` and SQL aggregates over it."""
    t0 = time.perf_counter()
    table = app.table("counts")
    made = time.perf_counter() - t0
    t0 = time.perf_counter()
    row = spark.sql("SELECT count(*) AS keys, sum(value) AS total, max(value) AS top FROM counts").first()
    sql = time.perf_counter() - t0
    t0 = time.perf_counter()
    hist = spark.sql("SELECT value, count(*) FROM counts GROUP BY value ORDER BY value").collect()
    grouped = time.perf_counter() - t0
    print(f"app.table(): {made * 1000:.0f} ms ({table.rdd.getNumPartitions()} Spark partitions); "
          f"SQL count/sum/max over {row['keys']:,} keys: {sql:.2f}s (total {row['total']:,}, top {row['top']}); "
          f"GROUP BY value: {grouped:.2f}s ({len(hist)} groups)")
    assert row["keys"] == args.keys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--updates", type=int, default=2_000, help="updates fed every 0.5 s")
    parser.add_argument("--clients", type=int, default=50, help="concurrent HTTP clients")
    parser.add_argument("--client-requests", type=int, default=20, help="lookups per HTTP client")
    parser.add_argument("--client-procs", type=int, default=2, help="processes the HTTP clients run in")
    parser.add_argument("--keep-alive", action="store_true", help="one connection per HTTP client")
    parser.add_argument("--client", choices=("http.client", "raw"), default="http.client",
                        help="raw: a socket and httptools' parser (less client CPU)")
    query_http_bench.add_rate_argument(parser)
    query_http_bench.add_switch_interval_argument(parser)
    query_http_bench.add_trace_argument(parser)
    parser.add_argument("--spark-nice", type=int, default=0, help="an experiment: add this to the nice value of "
                        "the Spark JVM this bench started (the driver's threads get the cores first)")
    parser.add_argument("--http-only", action="store_true", help="only the HTTP clients (no driver lookups, "
                        "scans, tables)")
    args = parser.parse_args()
    query_http_bench.set_switch_interval(args)
    query_http_bench.set_pollers(args)
    work = tempfile.mkdtemp(prefix="query-bench-")
    bootstrap = f"local://{work}/log"
    backend = open_backend(bootstrap)
    backend.create_topic("events", partitions=PARTITIONS)
    spark = get_or_create_session("local[2]", conf={"spark.sql.shuffle.partitions": str(PARTITIONS)})
    spark.sparkContext.setLogLevel("ERROR")
    builder = StreamsBuilder()
    (builder.stream("events", consumed=Consumed.with_(Serdes.string(), Serdes.string()))
     .group_by_key().count(materialized=Materialized.as_("counts")))
    app = Streams(builder.build(), StreamsConfig(application_id="query-bench", bootstrap=bootstrap,
                                                 state_dir=f"{work}/state", commit_interval=500,
                                                 application_server="0"),
                  spark=spark)
    try:
        started = time.perf_counter()
        app.start()
        renice_children(args.spark_nice)
        step = args.keys // PARTITIONS
        for p in range(PARTITIONS):
            append_keyed(backend, [key(i) for i in range(p * step, (p + 1) * step)])
        view = app.store("counts")
        last = key(args.keys - 1)
        while view.get(last) is None:
            time.sleep(0.2)
        print(f"{args.keys} keys counted and queryable after {time.perf_counter() - started:.1f}s")

        stop = threading.Event()
        fed = [0]

        def feed() -> None:   # keep batches committing: updates of random keys twice a second
            rng = random.Random(1)
            while not stop.is_set():
                append_keyed(backend, [key(rng.randrange(args.keys)) for _ in range(args.updates)])
                fed[0] += args.updates
                time.sleep(0.5)

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        versions_before = app._interactive().replicas.applied_versions
        if not args.http_only:
            driver_reads(view, args)
        if args.clients:
            concurrent_lookups(app._interactive().server.address[1], args, app._interactive())
        print(f"batches applied by the query replicas meanwhile: "
              f"{app._interactive().replicas.applied_versions - versions_before}; updates fed: {fed[0]:,}")

        if not args.http_only:
            tables(app, spark, args)
        stop.set()
        feeder.join()
    finally:
        app.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
