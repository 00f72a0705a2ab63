"""Topic backend throughput: produce (+flush) and read, records/s and MB/s.

Sections are plain functions returning result rows; the Spark read through the
topic data source runs benchmarks/spark_source_bench.py after them.

    python benchmarks/topics_bench.py [--records 200000] [--kafka-records 20000] [--spark-records 200000] [--value-bytes 100]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from streamlib.topics import TopicBackend, open_backend  # noqa: E402


class Result(NamedTuple):
    backend: str
    operation: str
    records: int
    seconds: float
    payload_bytes: int

    def row(self) -> str:
        rate = self.records / self.seconds
        return (f"{self.backend:<22} {self.operation:<18} {self.records:>9} {self.seconds:>8.3f} "
                f"{rate:>12,.0f} {self.payload_bytes / self.seconds / 1e6:>8.1f}")


def _payload(records: int, value_bytes: int) -> list[tuple[bytes, bytes]]:
    return [(b"key-%07d" % i, (b"%07d" % i).ljust(value_bytes - 11, b"x")) for i in range(records)]


def produce_and_read(backend: TopicBackend, name: str, records: int, value_bytes: int,
                     partitions: int = 4) -> list[Result]:
    """Produce ``records`` keyed records with produce()+flush(), then read them all back."""
    data = _payload(records, value_bytes)
    size = sum(len(k) + len(v) for k, v in data)
    topic = f"bench-{os.getpid()}-{time.monotonic_ns()}"
    backend.create_topic(topic, partitions=partitions)
    start = time.perf_counter()
    for key, value in data:
        backend.produce(topic, key=key, value=value)
    backend.flush()
    produced = time.perf_counter() - start
    start = time.perf_counter()
    read = sum(backend.read_arrow(topic, p, 0, end).num_rows for p, end in backend.end_offsets(topic).items())
    reading = time.perf_counter() - start
    if read != records:
        raise RuntimeError(f"{name}: read {read} records, produced {records}")
    return [Result(name, "produce+flush", records, produced, size),
            Result(name, "read_arrow", records, reading, size)]


def local_section(records: int, value_bytes: int) -> list[Result]:
    results = []
    for fsync in (True, False):
        with tempfile.TemporaryDirectory() as root, open_backend(f"local://{root}", fsync=fsync) as b:
            results += produce_and_read(b, f"local fsync={str(fsync).lower()}", records, value_bytes)
    return results


def kafka_section(records: int, value_bytes: int) -> list[Result]:
    """Against an Apache Kafka broker this starts itself (or $STREAMLIB_TEST_KAFKA)."""
    from kafka_broker import running_broker

    external = os.environ.get("STREAMLIB_TEST_KAFKA")
    if external:
        with open_backend(f"kafka://{external}") as b:
            return produce_and_read(b, "kafka", records, value_bytes)
    with running_broker() as bootstrap:
        with open_backend(f"kafka://{bootstrap}", timeout=60) as b:
            return produce_and_read(b, "kafka", records, value_bytes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=100, help="bytes per record, key included")
    parser.add_argument("--kafka-records", type=int, default=20_000,
                        help="records for the Kafka part (0 skips it)")
    parser.add_argument("--spark-records", type=int, default=200_000,
                        help="records for Spark reading the local log through the data source "
                             "(benchmarks/spark_source_bench.py; 0 skips it)")
    args = parser.parse_args()
    results = local_section(args.records, args.value_bytes)
    if args.kafka_records:
        results += kafka_section(args.kafka_records, args.value_bytes)
    print(f"{'backend':<22} {'operation':<18} {'records':>9} {'seconds':>8} {'records/s':>12} {'MB/s':>8}")
    for r in results:
        print(r.row())
    if args.spark_records:
        print("\nSpark through the streamlib data source (local log):", flush=True)
        bench = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark_source_bench.py")
        subprocess.run([sys.executable, bench, "--records", str(args.spark_records)], check=True)


if __name__ == "__main__":
    main()
