"""Kafka Streams' WordCountDemo in streamlib.

Reads lines from ``streams-plaintext-input``, splits them into lower-case words,
counts per word, and writes the counts (String keys, Long values) to
``streams-wordcount-output``. Run it with spark-submit, from any directory::

    PYSPARK_PYTHON=$VENV/bin/python $VENV/bin/spark-submit examples/wordcount/wordcount.py --input examples/wordcount/data/input.txt

``PYSPARK_PYTHON`` names the interpreter that has streamlib installed (``$VENV``: its
virtual environment, e.g. ``.venv`` of a clone); spark-submit starts the driver with it,
and streamlib starts Spark's Python workers with the driver's interpreter. Without
it spark-submit takes ``python3`` from ``PATH``, which works only inside the activated
environment.

By default it processes everything available, prints the top words and exits; a
second run continues the counts (progress lives beside the topics). ``--follow``
keeps it running until interrupted.
"""
from __future__ import annotations

import argparse
import re
import sys

from streamlib import Consumed, Materialized, Produced, Serdes, Streams, StreamsBuilder, StreamsConfig
from streamlib.spark.session import get_or_create_session
from streamlib.topics import open_backend

INPUT_TOPIC = "streams-plaintext-input"
OUTPUT_TOPIC = "streams-wordcount-output"
WORD_SPLIT = re.compile(r"\W+")


def split_words(line: str) -> list[str]:
    """Lower-case words of a line, split on non-word characters."""
    return [word for word in WORD_SPLIT.split(line.lower()) if word]


def build_topology(columns: bool = False, source: str = INPUT_TOPIC):
    """WordCountDemo; with ``columns`` the split runs as Spark Column expressions in
    the JVM (Spark only), otherwise as Python functions (also in TopologyTestDriver)."""
    builder = StreamsBuilder()
    lines = builder.stream(source, consumed=Consumed.with_(Serdes.string(), Serdes.string()))
    if columns:
        from pyspark.sql import functions as F

        words = (lines.flat_map_values(F.split(F.lower(F.col("value")), r"\W+"))
                 .filter(F.col("value") != "")
                 .select_key(F.col("value"))
                 .group_by_key())
    else:
        words = lines.flat_map_values(split_words).group_by(lambda key, word: word)
    counts = words.count(materialized=Materialized.as_("counts"))
    counts.to_stream().to(OUTPUT_TOPIC, produced=Produced.with_(Serdes.string(), Serdes.long()))
    return builder.build()


def produce_file(bootstrap: str, path: str, partitions: int) -> int:
    """Append the file's lines to the input topic (created if missing); returns the count."""
    backend = open_backend(bootstrap)
    backend.create_topic(INPUT_TOPIC, partitions=partitions, exist_ok=True)
    count = 0
    with open(path, encoding="utf-8") as lines:
        for count, line in enumerate(lines, 1):
            backend.produce(INPUT_TOPIC, key=None, value=line.rstrip("\n").encode("utf-8"))
    backend.flush()
    backend.close()
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", help="produce this text file's lines into the input topic first")
    parser.add_argument("--bootstrap", default="local://./streamlib-data",
                        help="topics backend: local://PATH (default) or kafka://HOST:PORT")
    parser.add_argument("--state-dir", default=None,
                        help="default: $STREAMLIB_STATE_DIR, else ~/.cache/streamlib/state")
    parser.add_argument("--partitions", type=int, default=4, help="partitions of a new input topic")
    parser.add_argument("--follow", action="store_true", help="keep running as a continuous query")
    parser.add_argument("--top", type=int, default=10, help="how many top words to print")
    parser.add_argument("--columns", action="store_true",
                        help="split lines with Spark Column expressions (in the JVM)")
    args = parser.parse_args(argv)

    if args.input:
        produced = produce_file(args.bootstrap, args.input, args.partitions)
        print(f"produced {produced} lines from {args.input} to {INPUT_TOPIC}")
    config = StreamsConfig(application_id="streams-wordcount", bootstrap=args.bootstrap,
                           state_dir=args.state_dir)
    # Column expressions need a Spark session when they are built: start it first.
    spark = get_or_create_session()
    app = Streams(build_topology(args.columns), config, spark=spark)
    if args.follow:
        app.start()
        print("wordcount is running; Ctrl-C to stop")
        try:
            app.await_termination()
        except KeyboardInterrupt:
            pass
        finally:
            app.stop()
        return 0
    app.process_available()
    top = sorted(app.store("counts").all(), key=lambda kv: (-kv[1], kv[0]))[: args.top]
    print(f"top {len(top)} words:")
    for word, count in top:
        print(f"{count:8d}  {word}")
    app.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
