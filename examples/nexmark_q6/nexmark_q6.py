"""Nexmark q6 with the Processor API: the average selling price of each seller's last
10 closed auctions, auctions closed by a timer at their expiry.

Reads the Nexmark ``auction`` and ``bid`` topics (keyed by auction id, JSON values, as
``benchmarks/nexmark`` writes them). A user processor keeps every open auction with its
best bid so far in the ``open-auctions`` store; a stream-time punctuator runs as each
second of event time passes and closes the auctions that expired before it, forwarding
``seller -> {auction, expires, price}`` for each that got a bid. The DSL then groups
the closed auctions by seller (a repartition), keeps each seller's last 10 by expiry
and writes their average price to ``nexmark-q6``. Stores are change-logged, so a
restart closes nothing twice and forgets no open auction. Run it with spark-submit,
from any directory::

    spark-submit examples/nexmark_q6/nexmark_q6.py

It produces the bundled sample (``data/events.jsonl``: 1,000 Nexmark events made by
``benchmarks/nexmark/generator.py`` with ``NexmarkConfig(events=1000, rate=40,
num_in_flight_auctions=10)``, so auctions last seconds, not minutes), processes it and
prints each seller's average.
"""
from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from pathlib import Path

from streamlib import (Consumed, Processor, Produced, PunctuationType, Record, Serdes, Stores, Streams,
                       StreamsBuilder, StreamsConfig, Topology)
from streamlib.topics import open_backend

OUTPUT_TOPIC = "nexmark-q6"
OPEN_AUCTIONS = "open-auctions"
CLOSE_EVERY = timedelta(seconds=1)   # stream time between two closing rounds
CLOSE_EVERY_MS = 1_000
LAST_N = 10
SAMPLE = Path(__file__).resolve().parent / "data" / "events.jsonl"
S, J = Serdes.string(), Serdes.json()


class CloseAuctions(Processor):
    """Keeps each open auction in ``open-auctions`` with its best bid so far and, as
    stream time passes each second, closes the auctions that expired before it: a
    closed auction with a bid is forwarded as ``seller -> {auction, expires, price}``.
    Auctions and bids come in keyed by auction id; a bid counts while its auction runs."""

    def init(self, context):
        self.context = context
        self.open = context.get_state_store(OPEN_AUCTIONS)
        context.schedule(CLOSE_EVERY, PunctuationType.STREAM_TIME, self.close_expired)

    def process(self, record):
        event = record.value
        if "expires" in event:                      # an auction
            self.open.put(record.key, {"seller": event["seller"], "dateTime": event["dateTime"],
                                       "expires": event["expires"], "price": None})
            return
        auction = self.open.get(record.key)
        if (auction is not None and auction["dateTime"] <= event["dateTime"] <= auction["expires"]
                and (auction["price"] is None or event["price"] > auction["price"])):
            self.open.put(record.key, {**auction, "price": event["price"]})

    def close_expired(self, now_ms: int) -> None:
        # Whole seconds, so which auctions close depends on stream time only, not on
        # when the punctuator ran (at a record, or at a batch boundary).
        cutoff = now_ms - now_ms % CLOSE_EVERY_MS
        expired = sorted((a["expires"], key, a) for key, a in self.open.all() if a["expires"] < cutoff)
        for expires, key, auction in expired:
            self.open.delete(key)
            if auction["price"] is not None:
                self.context.forward(Record(str(auction["seller"]),
                                            {"auction": int(key), "expires": expires, "price": auction["price"]},
                                            now_ms))


def keep_last(_seller, closed: dict, agg: dict) -> dict:
    """The seller's last ``LAST_N`` closed auctions by (expires, auction), whatever
    order they arrive in after the repartition."""
    last = sorted(agg["last"] + [[closed["expires"], closed["auction"], closed["price"]]])
    return {"last": last[-LAST_N:]}


def average(agg: dict):
    # Kafka's KStreamAggregate forwards the initial (empty) aggregate as the old value
    prices = [price for _, _, price in agg["last"]]
    return sum(prices) / len(prices) if prices else None


def build_topology(output_topic: str = OUTPUT_TOPIC) -> Topology:
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(
        Stores.persistent_key_value_store(OPEN_AUCTIONS), S, J))
    consumed = Consumed.with_(S, J)
    events = builder.stream("auction", consumed=consumed).merge(builder.stream("bid", consumed=consumed))
    (events.process(CloseAuctions, OPEN_AUCTIONS, named="close-auctions")
     .group_by_key().aggregate(lambda: {"last": []}, keep_last)
     .map_values(average)
     .to_stream().to(output_topic, produced=Produced.with_(S, J)))
    return builder.build()


def streams_config(application_id: str = "nexmark-q6", **settings) -> StreamsConfig:
    """String keys and JSON values by default, for the repartition and the stores."""
    return StreamsConfig(application_id=application_id, default_key_serde=S, default_value_serde=J, **settings)


def produce_sample(bootstrap: str, path: Path, partitions: int) -> int:
    """The auctions and bids of ``path`` (one ``{"topic", "key", "value", "timestamp"}``
    per line) to their topics; returns how many."""
    backend = open_backend(bootstrap)
    for topic in ("auction", "bid"):
        backend.create_topic(topic, partitions=partitions, exist_ok=True)
    count = 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            if event["topic"] in ("auction", "bid"):
                backend.produce(event["topic"], key=event["key"].encode("utf-8"), value=J.serialize(event["value"]),
                                timestamp=event["timestamp"])
                count += 1
    backend.flush()
    backend.close()
    return count


def read_averages(bootstrap: str) -> dict[str, float]:
    """The output topic as a table: each seller's latest average."""
    backend = open_backend(bootstrap)
    table = {}
    for partition, end in sorted(backend.end_offsets(OUTPUT_TOPIC).items()):
        for r in backend.read(OUTPUT_TOPIC, partition, 0, end):
            table[r.key.decode()] = None if r.value is None else J.deserialize(r.value)
    backend.close()
    return {seller: avg for seller, avg in table.items() if avg is not None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=SAMPLE, help="events to produce first (JSON lines)")
    parser.add_argument("--bootstrap", default="local://./streamlib-data",
                        help="topics backend: local://PATH (default) or kafka://HOST:PORT")
    parser.add_argument("--state-dir", default=None,
                        help="default: $STREAMLIB_STATE_DIR, else ~/.cache/streamlib/state")
    parser.add_argument("--partitions", type=int, default=2, help="partitions of new input topics")
    args = parser.parse_args(argv)

    produced = produce_sample(args.bootstrap, args.input, args.partitions)
    print(f"produced {produced} auctions and bids from {args.input}")
    app = Streams(build_topology(), streams_config(bootstrap=args.bootstrap, state_dir=args.state_dir))
    app.process_available()
    still_open = sum(1 for _ in app.store(OPEN_AUCTIONS).all())
    app.stop()
    averages = read_averages(args.bootstrap)
    for seller, avg in sorted(averages.items()):
        print(f"  seller {seller}  {avg:.2f}")
    print(f"{len(averages)} sellers in {OUTPUT_TOPIC}; {still_open} auctions still open")
    return 0


if __name__ == "__main__":
    sys.exit(main())
