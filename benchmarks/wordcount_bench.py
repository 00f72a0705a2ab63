"""Wordcount throughput: streamlib vs a hand-written Spark Structured Streaming query.

Same input (2M words, Zipf over a 50k vocabulary, fixed seed, in a 4-partition topic
of the embedded local log, read through the same streamlib data source), same
``local[2]``, same number of shuffle partitions; once as a single micro-batch and once
split into 20 micro-batches. streamlib runs the example's topology twice: with the
split as Python functions, and with it as Spark Column expressions (``--columns``).
The hand-written query is ``groupBy(word).count()`` with
the RocksDB state store provider and the no-op sink (it writes nothing out; streamlib
also writes every changed count to the output topic).

    .venv/bin/python benchmarks/wordcount_bench.py [--words 2000000] [--batches 20]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from streamlib import Streams, StreamsConfig  # noqa: E402
from streamlib.spark.session import get_or_create_session  # noqa: E402
from streamlib.topics import open_backend, records_to_arrow  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "examples", "wordcount"))
from wordcount import INPUT_TOPIC, build_topology  # noqa: E402

PARTITIONS = 4
WORDS_PER_LINE = 10


def make_lines(words: int, vocabulary: int, seed: int) -> list[bytes]:
    """Zipf-distributed words (s=1) over ``vocabulary`` distinct words, 10 per line."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, vocabulary + 1)
    probabilities = (1.0 / ranks) / (1.0 / ranks).sum()
    drawn = rng.choice(vocabulary, size=words, p=probabilities)
    names = np.array([f"word{i}" for i in range(vocabulary)])
    tokens = names[drawn]
    return [" ".join(tokens[i:i + WORDS_PER_LINE]).encode() for i in range(0, words, WORDS_PER_LINE)]


def fill_topic(bootstrap: str, lines: list[bytes]) -> None:
    backend = open_backend(bootstrap)
    backend.create_topic(INPUT_TOPIC, partitions=PARTITIONS, exist_ok=True)
    for p in range(PARTITIONS):
        chunk = lines[p::PARTITIONS]
        backend.append(INPUT_TOPIC, p, records_to_arrow([(None, line, 0, ()) for line in chunk]))
    backend.close()


def run_spark(spark, bootstrap: str, checkpoint: str, per_batch: int | None) -> tuple[float, int]:
    from pyspark.sql import functions as F

    reader = spark.readStream.format("streamlib").option("bootstrap", bootstrap).option("topics", INPUT_TOPIC)
    if per_batch:
        reader = reader.option("maxRecordsPerTrigger", str(per_batch))
    words = (reader.load()
             .select(F.explode(F.split(F.lower(F.col("value").cast("string")), r"\W+")).alias("word"))
             .where(F.col("word") != ""))
    query = (words.groupBy("word").count().writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", checkpoint))
    # Like Streams.process_available: availableNow for one batch, else back-to-back
    # batches until a trigger finds nothing new.
    start = time.perf_counter()
    if per_batch:
        handle = query.trigger(processingTime="0 seconds").start()
        handle.processAllAvailable()
        handle.stop()
    else:
        handle = query.trigger(availableNow=True).start()
        handle.awaitTermination()
    elapsed = time.perf_counter() - start
    return elapsed, sum(1 for p in handle.recentProgress if p["numInputRows"] > 0)


def run_streamlib(spark, bootstrap: str, state_dir: str, per_batch: int | None,
                  columns: bool) -> tuple[float, int, Streams]:
    config = StreamsConfig(application_id=f"bench-{per_batch or 'all'}-{columns}", bootstrap=bootstrap,
                           state_dir=state_dir, max_records_per_batch=per_batch)
    app = Streams(build_topology(columns), config, spark=spark)
    start = time.perf_counter()
    app.process_available()
    elapsed = time.perf_counter() - start
    return elapsed, app.metrics()["last_batch"] + 1, app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=2_000_000)
    parser.add_argument("--vocabulary", type=int, default=50_000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="streamlib-wc-bench-")
    bootstrap = f"local://{work}/log"
    lines = make_lines(args.words, args.vocabulary, args.seed)
    fill_topic(bootstrap, lines)
    spark = get_or_create_session("local[2]", "wordcount-bench", {
        "spark.sql.shuffle.partitions": str(PARTITIONS),
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    per_batch = -(-len(lines) // args.batches)
    print(f"{args.words:,} words in {len(lines):,} lines, {PARTITIONS} partitions, local[2]")
    print(f"{'setting':<22}{'engine':<15}{'seconds':>9}{'batches':>9}{'words/s':>12}"
          f"{'vs spark':>9}")
    for label, limit in (("one micro-batch", None), (f"{args.batches} micro-batches", per_batch)):
        spark_s, spark_batches = run_spark(spark, bootstrap, f"{work}/ckpt-{limit}", limit)
        rows = [("spark", spark_s, spark_batches)]
        for engine, columns in (("streamlib", False), ("streamlib+col", True)):
            ours_s, our_batches, app = run_streamlib(spark, bootstrap, f"{work}/state", limit, columns)
            total = sum(v for _, v in app.store("counts").all())
            assert total == args.words, f"{engine} counted {total} words, expected {args.words}"
            app.stop()
            rows.append((engine, ours_s, our_batches))
        for engine, seconds, batches in rows:
            ratio = f"{spark_s / seconds:>8.2f}x" if engine != "spark" else ""
            print(f"{label:<22}{engine:<15}{seconds:>9.2f}{batches:>9}{args.words / seconds:>12,.0f}{ratio}")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
