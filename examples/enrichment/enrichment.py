"""Order enrichment with late customer updates: a stream–table left join with a
grace period (the late-update re-trigger).

Orders (keyed by customer id) are joined with the ``customers`` table as of each
order's time: an order is enriched at once with the customer version valid when it
was placed; when a customer update arrives late (its time is older than orders
already enriched), the affected orders are enriched again and the corrected results
carry the header ``streamlib.update``. Run it with spark-submit, from any directory::

    PYSPARK_PYTHON=$VENV/bin/python $VENV/bin/spark-submit examples/enrichment/enrichment.py

(``PYSPARK_PYTHON``: the interpreter that has streamlib installed, ``$VENV`` its
environment; docs/getting-started.md says why.)

It produces the first batch of the bundled events (``data/events.tsv``), processes
them, then produces the second batch (late customer updates) and processes again,
and prints each order's first result and its corrections. Topics and state live in
``./streamlib-enrichment`` (recreated on each run).
"""
from __future__ import annotations

import argparse
import shutil
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from streamlib import Consumed, Joined, Produced, Serdes, Streams, StreamsBuilder, StreamsConfig
from streamlib.topics import open_backend

ORDERS, CUSTOMERS, OUTPUT = "orders", "customers", "enriched-orders"
GRACE = timedelta(hours=1)
SAMPLE = Path(__file__).resolve().parent / "data" / "events.tsv"
S = Serdes.string()


def enrich(order: str, customer: str | None) -> str:
    return f"{order} for {customer or 'an unknown customer'}"


def build_topology():
    """Orders left-joined with customers as of each order's time, grace 1 hour."""
    builder = StreamsBuilder()
    customers = builder.table(CUSTOMERS, consumed=Consumed.with_(S, S))
    orders = builder.stream(ORDERS, consumed=Consumed.with_(S, S))
    (orders.left_join(customers, enrich, Joined.with_(S, S, S, grace=GRACE))
     .to(OUTPUT, produced=Produced.with_(S, S)))
    return builder.build()


def read_events(path: Path) -> dict[int, list[tuple[str, str, str, int]]]:
    """``batch -> [(topic, key, value, timestamp ms)]`` from ``batch<TAB>time<TAB>topic<TAB>key<TAB>value``."""
    batches: dict[int, list] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        batch, stamp, topic, key, value = line.split("\t")
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        batches.setdefault(int(batch), []).append((topic, key, value, int(when.timestamp() * 1000)))
    return batches


def produce(bootstrap: str, events: list[tuple[str, str, str, int]]) -> None:
    backend = open_backend(bootstrap)
    for topic in (ORDERS, CUSTOMERS):
        backend.create_topic(topic, partitions=1, exist_ok=True)
    for topic, key, value, timestamp in events:
        backend.produce(topic, key=S.serialize(key), value=S.serialize(value), timestamp=timestamp)
    backend.close()


def print_results(bootstrap: str) -> int:
    """Each order's first result, then its corrections, in order of order time."""
    backend = open_backend(bootstrap)
    per_order: dict[tuple[int, str], list[tuple[str, bool]]] = {}
    for partition, end in sorted(backend.end_offsets(OUTPUT).items()):
        for record in backend.read(OUTPUT, partition, 0, end):
            corrected = dict(record.headers).get("streamlib.update") is not None
            per_order.setdefault((record.timestamp, S.deserialize(record.key)), []).append(
                (S.deserialize(record.value), corrected))
    backend.close()
    corrections = 0
    for (timestamp, customer), results in sorted(per_order.items()):
        when = datetime.fromtimestamp(timestamp / 1000, timezone.utc).strftime("%H:%M")
        for value, corrected in results:
            label = "  corrected:" if corrected else f"{when} {customer}:"
            corrections += corrected
            print(f"{label:12s} {value}")
    return corrections


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=SAMPLE, help="events file (default: the bundled sample)")
    parser.add_argument("--workdir", type=Path, default=Path("streamlib-enrichment"),
                        help="where topics and state live (recreated)")
    args = parser.parse_args(argv)

    shutil.rmtree(args.workdir, ignore_errors=True)
    bootstrap = f"local://{args.workdir.resolve() / 'topics'}"
    config = StreamsConfig(application_id="enrichment", bootstrap=bootstrap,
                           state_dir=str(args.workdir / "state"))
    app = Streams(build_topology(), config)
    try:
        for batch, events in sorted(read_events(args.input).items()):
            produce(bootstrap, events)
            app.process_available()
            print(f"batch {batch}: {len(events)} events processed")
    finally:
        app.stop()
    corrections = print_results(bootstrap)
    print(f"{corrections} result(s) corrected by late customer updates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
