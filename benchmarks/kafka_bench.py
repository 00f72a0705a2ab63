"""Kafka Streams (Java) against streamlib on one Apache Kafka broker, timed the same way.

Same broker (started here from the pinned Apache Kafka jars, or ``$STREAMLIB_TEST_KAFKA``),
same input topics (4 partitions), same machine. Each engine is timed from its start
(Kafka Streams: ``KafkaStreams.start()`` returned, its JVM up; streamlib: the application
built in a running SparkSession) until a ``read_committed`` reader of the output topic has
seen every final result, which this script computes from the input. Kafka Streams runs
``tests/oracle/.../FairBench.java`` with default caching, one stream thread per core and the
commit interval given; streamlib runs the same topology through Spark (``local[cores]``)
with ``start()`` and the same commit interval: one micro-batch, and commit, per interval, or
back to back while a batch takes longer (here the first batch reads all the input).

Workloads:

* ``wordcount``: Kafka's WordCountDemo, lines to word counts;
* ``windowed``: clicks counted per page in 1-minute tumbling windows without grace, final
  results only (``suppress(until_window_closes)``), the counting in 4 tasks after the
  re-grouping by page. The clicks are in one input partition, in time order, and a last
  click per page an hour later closes every window: with clicks spread over partitions
  read at different speeds, which clicks are late (and which windows a closing click
  closes early) would depend on the engine's reading order, and no final count would be
  known in advance;
* ``join``: orders joined with a customers table (the classic stream-table join), the
  customers older than every order (Kafka Streams with ``max.task.idle.ms`` 1 s, so that
  it reads them first).

    .venv/bin/python benchmarks/kafka_bench.py [--workload wordcount|windowed|join ...]
        [--words 2000000] [--clicks 1000000] [--orders 500000] [--commit-ms 1000]
"""
from __future__ import annotations

import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from contextlib import nullcontext
from datetime import timedelta
from typing import Callable, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "tools")]
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import numpy as np  # noqa: E402
from confluent_kafka import Consumer, TopicPartition  # noqa: E402

from kafka_local import running_broker  # noqa: E402
from oracle_driver import build_oracle  # noqa: E402
from streamlib import (Consumed, Produced, Serdes, Streams, StreamsBuilder, StreamsConfig, Suppressed,  # noqa: E402
                       TimeWindows)
from streamlib.spark.kafka_source import session_conf  # noqa: E402
from streamlib.spark.session import get_or_create_session  # noqa: E402
from streamlib.topics import open_backend  # noqa: E402
from wordcount_bench import make_lines  # noqa: E402

PARTITIONS = 4
S, L = Serdes.string(), Serdes.long()
MINUTE = 60_000


class Workload:
    """Input records per topic, the expected final results, and how to read the output."""

    def __init__(self, name: str, inputs: dict[str, list[tuple]], expected: dict, value: str,
                 table: Optional[str] = None, partition: Optional[int] = None):
        self.name, self.inputs, self.expected, self.value, self.table = name, inputs, expected, value, table
        #: the input partition of every record (None: by key, round robin without one)
        self.partition = partition

    @property
    def records(self) -> int:
        return sum(len(rows) for rows in self.inputs.values())


def wordcount(words: int, topic: str) -> Workload:
    lines = [line.decode() for line in make_lines(words, 50_000, 7)]
    counts = Counter(w for line in lines for w in re.split(r"\W+", line.lower()) if w)
    return Workload("wordcount", {topic: [(None, line, None) for line in lines]}, dict(counts), "long")


def windowed(clicks: int, topic: str) -> Workload:
    rng = np.random.default_rng(7)
    pages = [f"/page{i}" for i in range(200)]
    times = np.cumsum(rng.integers(0, 120, clicks))       # ~1,000 clicks per minute of event time
    chosen = rng.zipf(1.3, clicks) % len(pages)
    rows = [(f"user{u}", pages[p], int(t)) for u, p, t in zip(rng.integers(0, 10_000, clicks), chosen, times)]
    expected = Counter(f"{page}@{t - t % MINUTE}" for _, page, t in rows)
    closing = int(times[-1]) + 60 * MINUTE
    rows += [("closer", page, closing) for page in pages]   # closes every window of every page
    return Workload("windowed", {topic: rows}, dict(expected), "long", partition=0)


def join(orders: int, topic: str, table: str) -> Workload:
    rng = np.random.default_rng(7)
    customers = [(f"c{i}", f"name{i}", 1) for i in range(50_000)]
    rows = [(f"c{c}", f"o{i}", 1_000 + i) for i, c in enumerate(rng.integers(0, len(customers), orders))]
    expected = {f"{order}/name{customer[1:]}": True for customer, order, _ in rows}
    return Workload("join", {table: customers, topic: rows}, expected, "string", table=table)


def produce(bootstrap: str, workload: Workload, outputs: list[str]) -> None:
    """Write the input topics and create the output topics (the broker creates none)."""
    with open_backend(f"kafka://{bootstrap}", timeout=60) as backend:
        for topic in outputs:
            backend.create_topic(topic, partitions=PARTITIONS)
        for topic, rows in workload.inputs.items():   # the table first: older than every order
            backend.create_topic(topic, partitions=PARTITIONS)
            for key, value, timestamp in rows:
                backend.produce(topic, key=None if key is None else key.encode(), value=value.encode(),
                                timestamp=timestamp, partition=workload.partition)
            backend.flush()


class Watcher(threading.Thread):
    """Reads the output topic ``read_committed`` until every expected final result is
    there: the latest value per key (counts), or every expected value (join results)."""

    def __init__(self, bootstrap: str, topic: str, workload: Workload):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.workload = bootstrap, topic, workload
        self.done = threading.Event()
        self.finished_at: Optional[float] = None

    def run(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"watch-{uuid.uuid4().hex}",
                             "isolation.level": "read_committed", "enable.auto.commit": False,
                             "auto.offset.reset": "earliest"})
        while True:   # the engine creates the output topic
            topics = consumer.list_topics(self.topic, timeout=10).topics
            if self.topic in topics and topics[self.topic].partitions:
                break
            time.sleep(0.1)
        consumer.assign([TopicPartition(self.topic, p, 0) for p in topics[self.topic].partitions])
        expected, seen, missing = self.workload.expected, {}, len(self.workload.expected)
        counts = self.workload.value == "long"
        try:
            while missing:
                for message in consumer.consume(10_000, 0.2):
                    if message.error() or message.value() is None:
                        continue
                    if counts:
                        key = message.key().decode()
                        right = struct.unpack(">q", message.value())[0] == expected.get(key)
                        missing += seen.get(key, False) - right
                        seen[key] = right
                    else:
                        value = message.value().decode()
                        if value in expected and value not in seen:
                            seen[value] = True
                            missing -= 1
            self.finished_at = time.perf_counter()
        finally:
            consumer.close()
            self.done.set()

    def wait(self, timeout: float) -> float:
        if not self.done.wait(timeout):
            raise TimeoutError(f"{self.workload.name}: the final results did not all arrive in {timeout:.0f} s")
        return self.finished_at


def kafka_streams(bootstrap: str, workload: Workload, topic: str, output: str, workdir: str, threads: int,
                  commit_ms: int) -> float:
    build = build_oracle()
    watcher = Watcher(bootstrap, output, workload)
    command = ["java", "-Xmx2g", "-cp", f"{build / 'classes'}:{build / 'libs'}/*", "streamlib.oracle.FairBench",
               workload.name, bootstrap, topic, output, f"ks-{workload.name}-{uuid.uuid4().hex[:6]}",
               os.path.join(workdir, f"ks-state-{workload.name}"), str(threads), str(commit_ms)]
    if workload.table:
        command.append(workload.table)
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        if proc.stdout.readline().strip() != "started":
            raise RuntimeError(f"Kafka Streams did not start:\n{proc.stderr.read()[-3000:]}")
        started = time.perf_counter()
        watcher.start()
        return watcher.wait(1800) - started
    finally:
        proc.stdin.close()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


def streamlib_topology(workload: Workload, topic: str, output: str):
    builder = StreamsBuilder()
    if workload.name == "wordcount":
        (builder.stream(topic, consumed=Consumed.with_(S, S))
         .flat_map_values(lambda line: [w for w in re.split(r"\W+", line.lower()) if w])
         .group_by(lambda _, word: word).count().to_stream().to(output, produced=Produced.with_(S, L)))
    elif workload.name == "windowed":
        (builder.stream(topic, consumed=Consumed.with_(S, S)).group_by(lambda _, page: page)
         .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=1))).count()
         .suppress(Suppressed.until_window_closes()).to_stream()
         .map(lambda w, n: (f"{w.key}@{w.window.start}", n)).to(output, produced=Produced.with_(S, L)))
    else:
        customers = builder.table(workload.table, consumed=Consumed.with_(S, S))
        (builder.stream(topic, consumed=Consumed.with_(S, S))
         .join(customers, lambda order, customer: f"{order}/{customer}").to(output, produced=Produced.with_(S, S)))
    return builder.build()


def streamlib_run(spark, bootstrap: str, workload: Workload, topic: str, output: str, workdir: str,
                  commit_ms: int) -> float:
    url = f"kafka://{bootstrap}"
    app_id = f"sl-{workload.name}-{uuid.uuid4().hex[:6]}"   # a workload named twice runs twice, afresh
    config = StreamsConfig(application_id=app_id, bootstrap=url,
                           commit_interval=timedelta(milliseconds=commit_ms),
                           state_dir=os.path.join(workdir, f"state-{app_id}"),
                           checkpoint_location=os.path.join(workdir, f"checkpoint-{app_id}"))
    watcher = Watcher(bootstrap, output, workload)
    started = time.perf_counter()
    app = Streams(streamlib_topology(workload, topic, output), config, spark=spark)
    watcher.start()
    app.start()   # runs as Kafka Streams does: a micro-batch (and commit) per commit interval
    finished = watcher.wait(600)
    app.stop()
    return finished - started


WORKLOADS: dict[str, Callable[[argparse.Namespace, str], Workload]] = {
    "wordcount": lambda args, topic: wordcount(args.words, topic),
    "windowed": lambda args, topic: windowed(args.clicks, topic),
    "join": lambda args, topic: join(args.orders, topic, f"{topic}-customers"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS),
                        help="default: all three")
    parser.add_argument("--words", type=int, default=2_000_000)
    parser.add_argument("--clicks", type=int, default=1_000_000)
    parser.add_argument("--orders", type=int, default=500_000)
    parser.add_argument("--commit-ms", type=int, default=1000, help="both engines' commit interval")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    external = os.environ.get("STREAMLIB_TEST_KAFKA")
    rows = []
    with (nullcontext(external) if external else running_broker()) as bootstrap, \
            tempfile.TemporaryDirectory() as workdir:
        spark = get_or_create_session(f"local[{args.cores}]", "kafka-bench",
                                      {**session_conf(f"kafka://{bootstrap}"),
                                       "spark.sql.shuffle.partitions": str(PARTITIONS)})
        spark.sparkContext.setLogLevel("ERROR")
        for name in args.workload or list(WORKLOADS):
            topic = f"bench-{name}-{uuid.uuid4().hex[:6]}"
            workload = WORKLOADS[name](args, topic)
            produce(bootstrap, workload, [f"{topic}-ks-out", f"{topic}-sl-out"])
            ks = kafka_streams(bootstrap, workload, topic, f"{topic}-ks-out", workdir, args.cores, args.commit_ms)
            sl = streamlib_run(spark, bootstrap, workload, topic, f"{topic}-sl-out", workdir, args.commit_ms)
            rows.append((name, workload.records, ks, sl))
            print(f"{name}: Kafka Streams {ks:.1f} s, streamlib {sl:.1f} s", flush=True)
    load = os.getloadavg()[0]
    print(f"\n{PARTITIONS} partitions, {args.cores} cores, Kafka Streams commit interval {args.commit_ms} ms, "
          f"load {load:.1f}")
    print("| workload | records | Kafka Streams | streamlib | streamlib / Kafka Streams (records/s) |")
    print("|---|---|---|---|---|")
    for name, records, ks, sl in rows:
        print(f"| {name} | {records:,} | {ks:.1f} s | {sl:.1f} s | {ks / sl:.2f}x |")


if __name__ == "__main__":
    main()
