"""Throughput of the ``streamlib`` Spark data source on the local log.

Writes N records (~100-byte values) to a 4-partition topic, then measures on
``local[2]``: a batch read, a streaming ``availableNow`` read (noop sink) with all
columns and with a pruned schema (``value binary``), a batch read with ranges split
(``minPartitions``), a batch write through the sink, and the backend's own
``read_arrow`` for reference.

    python benchmarks/spark_source_bench.py [--records 1000000] [--partitions 4]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import pyarrow as pa

from streamlib.spark.session import get_or_create_session
from streamlib.topics import APPEND_SCHEMA, open_backend
from streamlib.topics.base import HEADER_TYPE

VALUE_BYTES = 100


def make_topic(backend, topic: str, records: int, partitions: int) -> int:
    """Fill ``topic``; return its payload size in bytes (keys + values)."""
    backend.create_topic(topic, partitions=partitions)
    per = records // partitions
    payload = 0
    for p in range(partitions):
        keys = pa.array([b"key-%08d" % i for i in range(per)], pa.binary())
        values = pa.array([(b"%08d" % i) * (VALUE_BYTES // 8) for i in range(per)], pa.binary())
        table = pa.Table.from_arrays(
            [pa.array(range(per), pa.int64()), keys, values, pa.array([[]] * per, HEADER_TYPE)],
            schema=APPEND_SCHEMA)
        backend.append(topic, p, table)
        payload += keys.nbytes + values.nbytes
    return payload


def timed(label: str, records: int, payload: int, run) -> None:
    start = time.perf_counter()
    run()
    secs = time.perf_counter() - start
    print(f"{label:<38} {secs:7.2f} s  {records / secs / 1e6:6.2f} M records/s  "
          f"{payload / secs / 1e6:7.1f} MB/s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    root = tempfile.mkdtemp(prefix="streamlib-bench-")
    try:
        backend = open_backend(f"local://{root}/log")
        payload = make_topic(backend, "in", args.records, args.partitions)
        backend.create_topic("out", partitions=args.partitions)
        n = sum(backend.end_offsets("in").values())
        spark = get_or_create_session("local[2]", "streamlib-bench",
                                      {"spark.sql.shuffle.partitions": "4"})
        spark.sparkContext.setLogLevel("ERROR")

        def read_arrow_all() -> None:
            for p, end in backend.end_offsets("in").items():
                backend.read_arrow("in", p, 0, end)

        def source(reader, schema=None, **options):
            if schema is not None:
                reader = reader.schema(schema)
            return (reader.format("streamlib").option("bootstrap", backend.url).option("topics", "in")
                    .options(**options).load())

        def batch_read() -> None:
            total = source(spark.read).selectExpr("count(*) AS n", "sum(length(value)) AS b").first()
            assert total.n == n, total

        def split_read() -> None:
            total = (source(spark.read, minPartitions=str(2 * args.partitions))
                     .selectExpr("count(*) AS n", "sum(length(value)) AS b").first())
            assert total.n == n, total

        def stream_read(schema=None) -> None:
            query = (source(spark.readStream, schema).writeStream.format("noop")
                     .option("checkpointLocation", tempfile.mkdtemp(dir=root))
                     .trigger(availableNow=True).start())
            query.awaitTermination()
            assert sum(p["numInputRows"] for p in query.recentProgress) == n

        def batch_write() -> None:
            (source(spark.read).select("key", "value", "timestamp", "headers").write
             .format("streamlib").option("bootstrap", backend.url).option("topic", "out")
             .mode("append").save())
            assert sum(backend.end_offsets("out").values()) == n

        print(f"{n} records, {payload / 1e6:.0f} MB payload, {args.partitions} partitions, local[2]")
        timed("backend read_arrow (no Spark)", n, payload, read_arrow_all)
        timed("warm-up batch read", n, payload, batch_read)
        timed("batch read (count + sum(length))", n, payload, batch_read)
        timed(f"batch read, minPartitions={2 * args.partitions}", n, payload, split_read)
        timed("streaming availableNow read (noop)", n, payload, stream_read)
        timed("streaming read, schema 'value binary'", n, payload, lambda: stream_read("value binary"))
        timed("batch read + write to topic (sink)", n, payload, batch_write)
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
