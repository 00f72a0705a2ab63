"""Wordcount side by side in ONE Spark session (warm JVM for everyone), same input:
  spark-files   : Spark Structured Streaming's native text-file source, groupBy().count(),
                  RocksDB state store provider, noop sink (what a Spark user writes by hand)
  spark-src     : the same query reading the topic through streamlib's data source
  streamlib     : Kafka's WordCountDemo topology, split as Python functions
  streamlib+col : the same, split as Spark Column steps
each in one micro-batch and in B micro-batches; counts are checked. Uses only streamlib's
public API (shared/API.md, including "Topics as Spark DataFrames") and StreamsConfig's
``max_records_per_batch`` and ``checkpoint_location``.

The project's copy of the lead's shared script (same design, same output); the
README's table of latest numbers comes from it.

usage (from the project root): .venv/bin/python benchmarks/wc_side_by_side.py [--words N] [--batches B] [--reps R]
"""
import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from pyspark.sql import functions as F  # noqa: E402

from common import bench_session  # noqa: E402
from streamlib import (Consumed, Materialized, Produced, Serdes, Streams, StreamsBuilder,  # noqa: E402
                       StreamsConfig)
from streamlib.topics import open_backend  # noqa: E402
from wordcount_bench import make_lines as make_byte_lines  # noqa: E402

TOPIC, PARTITIONS = "lines", 4
SPLIT = re.compile(r"\W+")


def make_lines(words, vocabulary=50_000, seed=42):
    """Zipf words over a 50k vocabulary, 10 per line (as the other wordcount benchmarks)."""
    return [line.decode() for line in make_byte_lines(words, vocabulary, seed)]


def topology(columns):
    b = StreamsBuilder()
    lines = b.stream(TOPIC, consumed=Consumed.with_(Serdes.string(), Serdes.string()))
    if columns:
        words = (lines.flat_map_values(F.split(F.lower(F.col("value")), r"\W+"))
                 .filter(F.col("value") != "").select_key(F.col("value")).group_by_key())
    else:
        words = lines.flat_map_values(lambda v: [w for w in SPLIT.split(v.lower()) if w]) \
                     .group_by(lambda k, w: w)
    words.count(materialized=Materialized.as_("counts")).to_stream() \
         .to("counts-out", produced=Produced.with_(Serdes.string(), Serdes.long()))
    return b.build()


def write_input(work, lines, files):
    """``lines`` into a 4-partition topic of a local log under ``work`` (line i in
    partition i % 4, timestamps from 1000) and into ``files`` text files of consecutive
    lines (Spark's input); returns ``(bootstrap, files' directory)``."""
    boot = f"local://{work}/log"
    backend = open_backend(boot)
    backend.create_topic(TOPIC, partitions=PARTITIONS)
    for i, line in enumerate(lines):
        backend.produce(TOPIC, key=None, value=line.encode(), timestamp=1_000 + i, partition=i % PARTITIONS)
    backend.flush()
    backend.close()
    directory = f"{work}/files"
    os.makedirs(directory)
    per = -(-len(lines) // files)
    for i in range(files):
        with open(f"{directory}/part-{i:03d}.txt", "w") as f:
            f.write("\n".join(lines[i * per:(i + 1) * per]) + "\n")
    return boot, directory


def spark_words(lines):
    """What a Spark user writes: the lines' words, lower-cased, without empty ones."""
    value = F.col("value").cast("string")
    return lines.select(F.explode(F.split(F.lower(value), r"\W+")).alias("word")).where("word != ''")


def spark_count(words, checkpoint):
    """The words counted into Spark's no-op sink (a ``DataStreamWriter``, not started)."""
    return (words.groupBy("word").count().writeStream.outputMode("update").format("noop")
            .option("checkpointLocation", checkpoint))


def run_streamlib(spark, topology_, config, words):
    """Run the application until its input is processed; checks that it counted
    ``words`` words. Returns ``(wall-clock start, seconds)``."""
    app = Streams(topology_, config, spark=spark)
    started, t = time.time(), time.perf_counter()
    app.process_available()
    elapsed = time.perf_counter() - t
    total = sum(v for _, v in app.store("counts").all())
    app.stop()
    assert total == words, f"counted {total} words, expected {words}"
    return started, elapsed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--words", type=int, default=2_000_000)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--reps", type=int, default=2)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="wc-sbs-")
    print(f"load average: {os.getloadavg()}")
    lines = make_lines(a.words)
    boot, files = write_input(work, lines, a.batches)
    per = -(-len(lines) // a.batches)
    spark = bench_session("wc-side-by-side", PARTITIONS)
    n = [0]

    def fresh():
        n[0] += 1
        return f"{work}/run{n[0]}"

    def spark_query(reader, batches, source):
        words = spark_words(reader.load(source) if source else reader.load())
        t = time.perf_counter()
        q = spark_count(words, fresh())
        if batches > 1 and not source:
            q = q.trigger(processingTime="0 seconds").start()
            q.processAllAvailable()
            q.stop()
        else:
            q = q.trigger(availableNow=True).start()
            q.awaitTermination()
        return time.perf_counter() - t

    def spark_files(batches):
        r = spark.readStream.format("text")
        if batches > 1:
            r = r.option("maxFilesPerTrigger", 1)
        return spark_query(r, batches, files)

    def spark_src(batches):
        r = spark.readStream.format("streamlib").option("bootstrap", boot).option("topics", TOPIC)
        if batches > 1:
            r = r.option("maxRecordsPerTrigger", str(per))
        return spark_query(r, batches, None)

    def streamlib(columns):
        def run(batches):
            cfg = StreamsConfig(application_id=f"sbs{n[0]}", bootstrap=boot, state_dir=fresh(),
                                checkpoint_location=fresh(),
                                max_records_per_batch=per if batches > 1 else None)
            return run_streamlib(spark, topology(columns), cfg, a.words)[1]
        return run

    spark_files(1)  # warm the JVM
    rows = []
    for label, b in (("1 batch", 1), (f"{a.batches} batches", a.batches)):
        for name, fn in (("spark-files", spark_files), ("spark-src", spark_src),
                         ("streamlib", streamlib(False)), ("streamlib+col", streamlib(True))):
            times = [fn(b) for _ in range(a.reps)]
            med = statistics.median(times)
            rows.append((label, name, med))
            print(f"{label:<12}{name:<15}{med:8.2f}s {a.words / med:>12,.0f} words/s  "
                  f"runs={['%.1f' % x for x in times]}", flush=True)
    base = {label: s for label, name, s in rows if name == "spark-files"}
    print(f"load average: {os.getloadavg()}")
    print("ratios vs spark-files (words/s):")
    for label, name, s in rows:
        print(f"  {label:<12}{name:<15}{base[label] / s:6.2f}x")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
