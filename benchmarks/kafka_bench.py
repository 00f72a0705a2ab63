"""Wordcount on a real Apache Kafka broker: Kafka Streams (Java) against streamlib.

Same broker (started here from the pinned Apache Kafka jars, or
``$STREAMLIB_TEST_KAFKA``), same input (2M words by default, Zipf over a 50k
vocabulary, fixed seed, in a 4-partition topic), same machine. Kafka Streams runs
WordCountDemo (``tests/oracle/.../WordCountBench.java``, default caching and commit
interval) and is timed from ``start()`` until every input line was processed;
streamlib runs the example's topology (``examples/wordcount``, its input read by
Spark's Kafka source, ``local[2]``) and is timed over ``process_available()``.

    .venv/bin/python benchmarks/kafka_bench.py [--words 2000000] [--columns]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import nullcontext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "tools"),
                os.path.join(ROOT, "examples", "wordcount")]
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from kafka_local import running_broker  # noqa: E402
from oracle_driver import build_oracle  # noqa: E402
from streamlib import Streams, StreamsConfig  # noqa: E402
from streamlib.spark.kafka_source import session_conf  # noqa: E402
from streamlib.spark.session import get_or_create_session  # noqa: E402
from streamlib.topics import open_backend  # noqa: E402
from wordcount import INPUT_TOPIC, build_topology  # noqa: E402
from wordcount_bench import WORDS_PER_LINE, make_lines  # noqa: E402

PARTITIONS = 4


def produce(bootstrap: str, topic: str, lines: list[bytes]) -> None:
    with open_backend(f"kafka://{bootstrap}", timeout=60) as backend:
        backend.create_topic(topic, partitions=PARTITIONS)
        for line in lines:
            backend.produce(topic, value=line)
        backend.flush()


def kafka_streams(bootstrap: str, topic: str, lines: int, workdir: str) -> tuple[float, int]:
    build = build_oracle()
    done = subprocess.run(
        ["java", "-Xmx1g", "-cp", f"{build / 'classes'}:{build / 'libs'}/*", "streamlib.oracle.WordCountBench",
         bootstrap, topic, f"{topic}-ks-out", f"ks-wc-{uuid.uuid4().hex[:6]}", str(lines),
         os.path.join(workdir, "ks-state")], capture_output=True, text=True, timeout=1200)
    if done.returncode:
        raise RuntimeError(f"Kafka Streams failed:\n{done.stderr[-3000:]}")
    match = re.search(r"seconds=([\d.]+) words=(\d+)", done.stdout)
    return float(match.group(1)), int(match.group(2))


def streamlib_run(bootstrap: str, topic: str, workdir: str, columns: bool) -> float:
    url = f"kafka://{bootstrap}"
    spark = get_or_create_session("local[2]", "kafka-bench", {**session_conf(url),
                                                                "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    config = StreamsConfig(application_id=f"sl-wc-{uuid.uuid4().hex[:6]}", bootstrap=url,
                           state_dir=os.path.join(workdir, "sl-state"),
                           checkpoint_location=os.path.join(workdir, "sl-checkpoint"))
    app = Streams(build_topology(columns=columns, source=topic), config, spark=spark)
    started = time.perf_counter()
    app.process_available()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=2_000_000)
    parser.add_argument("--columns", action="store_true", help="streamlib splits with Spark Columns")
    args = parser.parse_args()
    lines = make_lines(args.words, 50_000, 7)
    external = os.environ.get("STREAMLIB_TEST_KAFKA")
    with (nullcontext(external) if external else running_broker()) as bootstrap, \
            tempfile.TemporaryDirectory() as workdir:
        topic = f"{INPUT_TOPIC}-{uuid.uuid4().hex[:6]}"
        produce(bootstrap, topic, lines)
        ks_seconds, ks_words = kafka_streams(bootstrap, topic, len(lines), workdir)
        sl_seconds = streamlib_run(bootstrap, topic, workdir, args.columns)
    words = len(lines) * WORDS_PER_LINE
    print(f"input: {words} words in {len(lines)} lines, {PARTITIONS} partitions")
    print(f"Kafka Streams {ks_seconds:8.1f} s  {ks_words / ks_seconds / 1e6:6.3f}M words/s")
    print(f"streamlib     {sl_seconds:8.1f} s  {words / sl_seconds / 1e6:6.3f}M words/s"
          f"{' (Column split)' if args.columns else ''}")
    print(f"streamlib / Kafka Streams: {(words / sl_seconds) / (ks_words / ks_seconds):.2f}x")


if __name__ == "__main__":
    main()
