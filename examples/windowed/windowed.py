"""Kafka Streams' windowed word count in streamlib: one final count per word and
1-minute tumbling window.

Reads timestamped lines from ``streams-windowed-input`` (record timestamps are the
event times), counts words per 1-minute window with 10 s of grace, suppresses
updates until each window closes, and writes one final count per window to
``streams-windowed-output`` (``Windowed`` keys in Kafka's TimeWindowedSerde format,
Long values). Run it with spark-submit, from any directory::

    PYSPARK_PYTHON=$VENV/bin/python $VENV/bin/spark-submit examples/windowed/windowed.py

(``PYSPARK_PYTHON``: the interpreter that has streamlib installed, ``$VENV`` its
environment; docs/getting-started.md says why.)

It produces the bundled sample (``data/events.tsv``: ISO time, tab, text) unless
``--input`` names another file, processes everything available, and prints the final
windows. Windows whose end + grace stream time has not reached yet stay open until
later records arrive (run again with more input, or ``--follow``).
"""
from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path

from streamlib import (Consumed, Materialized, Produced, Serdes, Streams, StreamsBuilder, StreamsConfig,
                       Suppressed, TimeWindows)
from streamlib.topics import open_backend

INPUT_TOPIC = "streams-windowed-input"
OUTPUT_TOPIC = "streams-windowed-output"
WINDOW = timedelta(minutes=1)
GRACE = timedelta(seconds=10)
SAMPLE = Path(__file__).resolve().parent / "data" / "events.tsv"
WORD_SPLIT = re.compile(r"\W+")


def split_words(line: str) -> list[str]:
    return [word for word in WORD_SPLIT.split(line.lower()) if word]


def build_topology():
    """Words per 1-minute tumbling window, final results only."""
    builder = StreamsBuilder()
    lines = builder.stream(INPUT_TOPIC, consumed=Consumed.with_(Serdes.string(), Serdes.string()))
    (lines.flat_map_values(split_words)
     .group_by(lambda key, word: word)
     .windowed_by(TimeWindows.of(WINDOW, grace=GRACE))
     .count(materialized=Materialized.as_("windowed-counts"))
     .suppress(Suppressed.until_window_closes())
     .to_stream()
     .to(OUTPUT_TOPIC, produced=Produced.with_(
         Serdes.time_windowed(Serdes.string(), WINDOW), Serdes.long())))
    return builder.build()


def produce_file(bootstrap: str, path: Path, partitions: int) -> int:
    """Append ``time<TAB>text`` lines to the input topic, each at its event time."""
    backend = open_backend(bootstrap)
    backend.create_topic(INPUT_TOPIC, partitions=partitions, exist_ok=True)
    count = 0
    with open(path, encoding="utf-8") as lines:
        for count, line in enumerate(lines, 1):
            stamp, _, text = line.rstrip("\n").partition("\t")
            when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            backend.produce(INPUT_TOPIC, key=None, value=text.encode("utf-8"),
                            timestamp=int(when.timestamp() * 1000))
    backend.flush()
    backend.close()
    return count


def print_final_windows(bootstrap: str) -> int:
    backend = open_backend(bootstrap)
    serde = Serdes.time_windowed(Serdes.string(), WINDOW)
    rows = []
    for partition, end in sorted(backend.end_offsets(OUTPUT_TOPIC).items()):
        for record in backend.read(OUTPUT_TOPIC, partition, 0, end):
            rows.append((serde.deserialize(record.key), Serdes.long().deserialize(record.value)))
    backend.close()
    rows.sort(key=lambda kv: (kv[0].window.start, -kv[1], kv[0].key))
    current = None
    for windowed, count in rows:
        if windowed.window.start != current:
            current = windowed.window.start
            start = datetime.utcfromtimestamp(current / 1000).strftime("%H:%M")
            end = datetime.utcfromtimestamp(windowed.window.end / 1000).strftime("%H:%M")
            print(f"window {start}-{end} UTC:")
        print(f"  {count:4d}  {windowed.key}")
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=SAMPLE,
                        help="produce this file's 'time<TAB>text' lines first (default: the bundled sample)")
    parser.add_argument("--no-input", action="store_true", help="produce nothing, only process")
    parser.add_argument("--bootstrap", default="local://./streamlib-data",
                        help="topics backend: local://PATH (default) or kafka://HOST:PORT")
    parser.add_argument("--state-dir", default=None,
                        help="default: $STREAMLIB_STATE_DIR, else ~/.cache/streamlib/state")
    parser.add_argument("--partitions", type=int, default=2, help="partitions of a new input topic")
    parser.add_argument("--follow", action="store_true", help="keep running as a continuous query")
    args = parser.parse_args(argv)

    if not args.no_input:
        produced = produce_file(args.bootstrap, args.input, args.partitions)
        print(f"produced {produced} lines from {args.input} to {INPUT_TOPIC}")
    config = StreamsConfig(application_id="streams-windowed-wordcount", bootstrap=args.bootstrap,
                           state_dir=args.state_dir)
    app = Streams(build_topology(), config)
    if args.follow:
        app.start()
        print("windowed wordcount is running; Ctrl-C to stop")
        try:
            app.await_termination()
        except KeyboardInterrupt:
            pass
        finally:
            app.stop()
        return 0
    app.process_available()
    metrics = app.metrics()
    app.stop()
    final = print_final_windows(args.bootstrap)
    print(f"{final} final window counts; stream time {metrics['stream_time']}, "
          f"{metrics['dropped_records']} late record(s) dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
