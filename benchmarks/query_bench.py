"""Interactive queries on a running application holding 1M keys, while it processes.

A count per key over 1M distinct keys (4 store partitions, embedded log). Once the
store holds every key, a feeder keeps appending updates of random keys (so batches keep
committing and the query replicas keep applying them) while this measures, on the
driver: point lookups (``app.store().get``, p50/p99/max), range scans of 1000 keys and
one full scan (keys/s); then ``N`` concurrent HTTP clients (``--clients``, in another
process so they do not share the application's GIL) each making ``--client-requests``
point lookups on the endpoint (a new connection per request), p50/p99/max; then
``app.table()`` and SQL aggregates over the 1M keys (Spark tasks read the store copies).

    .venv/bin/python benchmarks/query_bench.py [--keys 1000000] [--lookups 20000]
        [--clients 50] [--client-requests 20]
"""
from __future__ import annotations

import argparse
import http.client
import multiprocessing
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

PARTITIONS = 4


def key(i: int) -> str:
    return f"key{i:07d}"


def append(backend, keys: list[str], partition: int) -> None:
    n = len(keys)
    table = pa.table([pa.array(np.zeros(n, dtype=np.int64)), pa.array([k.encode() for k in keys], pa.binary()),
                      pa.array([b"x"] * n, pa.binary()),
                      pa.array([[]] * n, APPEND_SCHEMA.field("headers").type)], schema=APPEND_SCHEMA)
    backend.append("events", partition, table)


def percentile(samples: list[float], q: float) -> float:
    return float(np.percentile(np.array(samples), q))


def http_clients(port: int, keys: int, clients: int, requests: int, out) -> None:
    """In a child process: ``clients`` threads, each ``requests`` GETs of random keys,
    started together; puts ``(latencies ms, non-200 statuses)`` on ``out``."""
    start = threading.Barrier(clients)
    latencies: list[float] = []
    failures: list[str] = []

    def client(seed: int) -> None:
        rng = random.Random(seed)
        start.wait()
        for _ in range(requests):
            t = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("GET", f"/stores/counts/{key(rng.randrange(keys))}")
                response = conn.getresponse()
                response.read()
                conn.close()
                if response.status != 200:
                    failures.append(str(response.status))
            except OSError as exc:
                failures.append(type(exc).__name__)
            latencies.append((time.perf_counter() - t) * 1000)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.put((latencies, failures))


def concurrent_lookups(port: int, keys: int, clients: int, requests: int) -> None:
    context = multiprocessing.get_context("spawn")   # never fork a process running a JVM
    out = context.Queue()
    t0 = time.perf_counter()
    child = context.Process(target=http_clients, args=(port, keys, clients, requests, out))
    child.start()
    latencies, failures = out.get()
    seconds = time.perf_counter() - t0
    child.join()
    ms = [round(percentile(latencies, q), 2) for q in (50, 99)]
    print(f"HTTP point lookups, {clients} concurrent clients x {requests}: {len(latencies)} in {seconds:.1f}s "
          f"(with the client process's start); p50 {ms[0]} ms, p99 {ms[1]} ms, max {max(latencies):.1f} ms; "
          f"errors {len(failures)} {sorted(set(failures))}; load {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--updates", type=int, default=2_000, help="updates fed every 0.5 s")
    parser.add_argument("--clients", type=int, default=50, help="concurrent HTTP clients")
    parser.add_argument("--client-requests", type=int, default=20, help="lookups per HTTP client")
    args = parser.parse_args()
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
        step = args.keys // PARTITIONS
        for p in range(PARTITIONS):
            append(backend, [key(i) for i in range(p * step, (p + 1) * step)], p)
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
                append(backend, [key(rng.randrange(args.keys)) for _ in range(args.updates)], rng.randrange(PARTITIONS))
                fed[0] += args.updates
                time.sleep(0.5)

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        versions_before = app._interactive().replicas.applied_versions
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
        if args.clients:
            concurrent_lookups(app._interactive().server.address[1], args.keys, args.clients,
                               args.client_requests)
        print(f"batches applied by the query replicas meanwhile: "
              f"{app._interactive().replicas.applied_versions - versions_before}; updates fed: {fed[0]:,}")

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
        stop.set()
        feeder.join()
    finally:
        app.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
