"""De-duplication with the Processor API: drop a record whose id was seen in the last
10 minutes.

Reads ``id<TAB>payload`` records from ``dedup-input`` (the id is the key), keeps each id
it let through in the ``seen-ids`` store with the wall-clock time it first saw it, and
writes first occurrences to ``dedup-output``. A wall-clock punctuator runs every minute
and forgets ids older than 10 minutes (the TTL), so the store stays as large as 10
minutes of distinct ids; the store is change-logged, so a restart forgets nothing.
Run it with spark-submit, from any directory::

    spark-submit examples/dedup/dedup.py

It produces the bundled sample (``data/events.tsv``, 100 records with repeated ids)
unless ``--input`` names another file, processes everything available and prints what
went through.
"""
from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from pathlib import Path

from streamlib import (Consumed, Processor, Produced, PunctuationType, Serdes, Stores, Streams, StreamsBuilder,
                       StreamsConfig)
from streamlib.topics import open_backend

INPUT_TOPIC = "dedup-input"
OUTPUT_TOPIC = "dedup-output"
STORE = "seen-ids"
TTL = timedelta(minutes=10)
SWEEP = timedelta(minutes=1)
SAMPLE = Path(__file__).resolve().parent / "data" / "events.tsv"


class DropDuplicates(Processor):
    """Forwards a record unless its key is in ``seen-ids``; forgets keys after ``TTL``."""

    def init(self, context):
        self.context = context
        self.seen = context.get_state_store(STORE)
        context.schedule(SWEEP, PunctuationType.WALL_CLOCK_TIME, self.forget_old_ids)

    def process(self, record):
        if self.seen.get(record.key) is None:
            self.seen.put(record.key, self.context.current_system_time_ms)
            self.context.forward(record)

    def forget_old_ids(self, now_ms: int) -> None:
        expired = [key for key, first_seen in self.seen.all()
                   if now_ms - first_seen >= TTL.total_seconds() * 1000]
        for key in expired:
            self.seen.delete(key)


def build_topology():
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(
        Stores.persistent_key_value_store(STORE), Serdes.string(), Serdes.long()))
    (builder.stream(INPUT_TOPIC, consumed=Consumed.with_(Serdes.string(), Serdes.string()))
     .process(DropDuplicates, STORE, named="drop-duplicates")
     .to(OUTPUT_TOPIC, produced=Produced.with_(Serdes.string(), Serdes.string())))
    return builder.build()


def produce_file(bootstrap: str, path: Path, partitions: int) -> int:
    backend = open_backend(bootstrap)
    backend.create_topic(INPUT_TOPIC, partitions=partitions, exist_ok=True)
    count = 0
    with open(path, encoding="utf-8") as lines:
        for count, line in enumerate(lines, 1):
            key, _, payload = line.rstrip("\n").partition("\t")
            backend.produce(INPUT_TOPIC, key=key.encode("utf-8"), value=payload.encode("utf-8"))
    backend.flush()
    backend.close()
    return count


def read_output(bootstrap: str) -> list[tuple[str, str]]:
    backend = open_backend(bootstrap)
    rows = []
    for partition, end in sorted(backend.end_offsets(OUTPUT_TOPIC).items()):
        rows.extend((r.key.decode(), r.value.decode()) for r in backend.read(OUTPUT_TOPIC, partition, 0, end))
    backend.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=SAMPLE,
                        help="produce this file's 'id<TAB>payload' lines first (default: the bundled sample)")
    parser.add_argument("--bootstrap", default="local://./streamlib-data",
                        help="topics backend: local://PATH (default) or kafka://HOST:PORT")
    parser.add_argument("--state-dir", default=None,
                        help="default: $STREAMLIB_STATE_DIR, else ~/.cache/streamlib/state")
    parser.add_argument("--partitions", type=int, default=2, help="partitions of a new input topic")
    args = parser.parse_args(argv)

    produced = produce_file(args.bootstrap, args.input, args.partitions)
    print(f"produced {produced} records from {args.input} to {INPUT_TOPIC}")
    config = StreamsConfig(application_id="dedup", bootstrap=args.bootstrap, state_dir=args.state_dir)
    app = Streams(build_topology(), config)
    app.process_available()
    remembered = sum(1 for _ in app.store(STORE).all())
    app.stop()
    rows = read_output(args.bootstrap)
    for key, payload in rows:
        print(f"  {key}  {payload}")
    print(f"{len(rows)} records passed to {OUTPUT_TOPIC}; {remembered} ids remembered in {STORE!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
