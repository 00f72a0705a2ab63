"""Nexmark q0-q8: streamlib against Spark Structured Streaming's own queries, in one
Spark session, on the same generated events; checks both against a plain-Python
computation of each query and prints events/s per query and engine and the ratio.

usage (from the project root):
  .venv/bin/python benchmarks/nexmark/run.py [--events N] [--batches B] [--queries q0,q5]
                                             [--kafka HOST:PORT] [--partitions P]

Events are written to a fresh local log (``local://``) in a temporary directory, or with
``--kafka`` to that broker (``make kafka-up`` starts one; topics must not exist yet).
``--batches B`` cuts the input into about B micro-batches for both engines
(``max_records_per_batch`` / ``maxRecordsPerTrigger``). events/s counts the events of
the topics a query reads. q4 and q6 have no native Spark query (spark_native.py says why).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))   # benchmarks/: common.py
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import generator  # noqa: E402
import queries  # noqa: E402
import reference  # noqa: E402
import spark_native  # noqa: E402
from streamlib import Serdes, Streams  # noqa: E402
from streamlib.topics import open_backend  # noqa: E402

JSON = Serdes.json()


def read_output(bootstrap: str, topic: str) -> list[tuple[str, object]]:
    """``topic``'s records as (key, decoded JSON value), partition by partition in offset order."""
    backend = open_backend(bootstrap)
    try:
        rows = []
        for partition, end in sorted(backend.end_offsets(topic).items()):
            rows.extend((r.key.decode("utf-8"), None if r.value is None else JSON.deserialize(r.value))
                        for r in backend.read(topic, partition, 0, end))
        return rows
    finally:
        backend.close()


def run_streamlib(spark, query: str, bootstrap: str, work: str, max_records: int | None = None) -> tuple[float, str]:
    """Run ``query`` as a streamlib application until its input is processed; returns
    (seconds, output topic)."""
    build, _ = queries.QUERIES[query]
    name = f"nexmark-{query}-{uuid.uuid4().hex[:8]}"
    config = queries.streams_config(name, bootstrap=bootstrap, state_dir=f"{work}/{name}/state",
                                    checkpoint_location=f"{work}/{name}/checkpoint",
                                    max_records_per_batch=max_records)
    app = Streams(build(f"{name}-out"), config, spark=spark)
    started = time.perf_counter()
    app.process_available()
    elapsed = time.perf_counter() - started
    app.stop()
    return elapsed, f"{name}-out"


def run_spark(spark, query: str, bootstrap: str, work: str, max_records: int | None = None) -> tuple[float, str]:
    """Run Spark's own ``query`` until its input is processed and every window its
    watermark closes is written; returns (seconds, output topic)."""
    name = f"spark-{query}-{uuid.uuid4().hex[:8]}"
    backend = open_backend(bootstrap)   # Spark's sink writes to an existing topic
    backend.create_topic(f"{name}-out", partitions=backend.num_partitions(queries.QUERIES[query][1][0]))
    backend.close()
    started = time.perf_counter()
    running = spark_native.start(spark, query, bootstrap, f"{name}-out", f"{work}/{name}", max_records)
    try:
        running.processAllAvailable()
        # The windows the last watermark closes are written by no-data batches, which
        # processAllAvailable() does not wait for (and Trigger.AvailableNow does not run):
        # done once three looks 0.1 s apart find no trigger running and no new batch.
        quiet, batch, done = 0, None, time.perf_counter()
        while quiet < 3:
            time.sleep(0.1)
            latest = (running.lastProgress or {}).get("batchId")
            busy = running.status["isTriggerActive"] or running.status["isDataAvailable"]
            quiet = 0 if busy or latest != batch else quiet + 1
            if quiet == 0:
                batch, done = latest, time.perf_counter()
        elapsed = done - started   # not the looks that found it done
    finally:
        running.stop()
    return elapsed, f"{name}-out"


def warm_up(spark, work: str, partitions: int) -> None:
    """One small q0 on each engine, untimed: the JVM's first queries pay class loading
    and JIT warm-up that would otherwise be charged to whichever query runs first."""
    bootstrap = f"local://{work}/warm-up"
    generator.write_events(bootstrap, list(generator.generate(generator.NexmarkConfig(events=1_000))), partitions)
    for run in (run_streamlib, run_spark):
        run(spark, "q0", bootstrap, work)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=200_000, help="events to generate (all are kept in memory)")
    p.add_argument("--batches", type=int, default=1, help="micro-batches to cut the input into (about)")
    p.add_argument("--queries", default=",".join(queries.QUERIES))
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--rate", type=int, default=generator.NexmarkConfig.rate, help="events per second of event time")
    p.add_argument("--kafka", metavar="HOST:PORT", help="write the events to this Kafka broker, not a local log")
    a = p.parse_args(argv)
    unknown = set(a.queries.split(",")) - set(queries.QUERIES)
    if unknown:
        p.error(f"unknown queries {sorted(unknown)}: choose from {','.join(queries.QUERIES)}")
    from common import bench_session   # pyspark only once the arguments are good

    work = tempfile.mkdtemp(prefix="nexmark-")
    bootstrap = f"kafka://{a.kafka}" if a.kafka else f"local://{work}/log"
    events = list(generator.generate(generator.NexmarkConfig(events=a.events, rate=a.rate)))
    counts = generator.write_events(bootstrap, events, a.partitions)
    print(f"{a.events:,} events ({counts}) on {bootstrap}; load average {os.getloadavg()}", flush=True)
    spark = bench_session("nexmark", a.partitions)
    per_batch = -(-a.events // a.batches) if a.batches > 1 else None
    warm_up(spark, work, a.partitions)
    rows, failures = [], []
    for query in a.queries.split(","):
        read = sum(counts[t] for t in queries.QUERIES[query][1])
        expected = reference.compute(query, events)
        result = {}
        for engine, run in (("streamlib", run_streamlib), ("spark", run_spark)):
            if engine == "spark" and query not in spark_native.QUERIES:
                continue
            seconds, out = run(spark, query, bootstrap, work, per_batch)
            equal = reference.normal_form(query, read_output(bootstrap, out)) == expected
            if not equal:
                failures.append(f"{query} {engine}")
            result[engine] = (read / seconds, equal)
            print(f"{query:<4}{engine:<10}{seconds:8.2f}s {read / seconds:>12,.0f} events/s  "
                  f"{'equal' if equal else 'DIFFERENT'} ({len(expected)} results)", flush=True)
        rows.append((query, result))
    print(f"load average {os.getloadavg()}\n")
    print("| query | streamlib events/s | Spark events/s | ratio | results |")
    print("|---|---|---|---|---|")
    for query, result in rows:
        ours, theirs = result["streamlib"], result.get("spark")
        ratio = f"{ours[0] / theirs[0]:.2f}x" if theirs else "—"
        spark_rate = f"{theirs[0]:,.0f}" if theirs else "no native query"
        ok = "equal" if ours[1] and (theirs is None or theirs[1]) else "DIFFERENT"
        print(f"| {query} | {ours[0]:,.0f} | {spark_rate} | {ratio} | {ok} |")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"results differ from the plain-Python computation: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
