"""Nexmark q0-q8 as streamlib topologies, written as a Kafka Streams user writes them.

The queries follow the SQL of nexmark/nexmark (Flink), with these definitions where
that SQL leaves a choice or cannot be one streaming query:

q0  pass-through of the bids.
q1  bids with ``price`` in euro: ``price * 908 // 1000`` (integer cents).
q2  ``{auction, price}`` of the bids whose ``auction % 123 == 0``.
q3  ``{name, city, state, id}`` for each auction of category 10 whose seller lives in
    OR, ID or CA: a foreign-key table-table join (auction table -> person table by
    ``seller``), keyed by auction id; persons may arrive after their auctions.
q4  average winning price per category, where an auction's winning price is its highest
    bid with ``dateTime`` in ``[auction.dateTime, auction.expires]`` (Flink's q4; no
    reserve): a bid-auction stream-table join, a max per auction, an average per
    category of the maxima (a KTable ``group_by`` with adder and subtractor).
q5  hot items: bids counted per auction on 10 s windows advancing by 2 s, final counts
    (suppressed until the window closes), and for each window the auction with the most
    bids (ties: the larger auction id), keyed by window start.
q6  per seller, the average winning price of their last 10 closed auctions (by
    ``expires``, then id). A user processor keeps open auctions with their best bid in
    a store and closes them with a stream-time punctuator at the first whole second of
    stream time after their expiry: the
    Processor API, as Kafka Streams users write it; ``examples/nexmark_q6/`` is this query.
q7  the highest bid of each 10 s tumbling window (ties: larger bidder, then auction),
    final results, keyed by window start.
q8  persons who opened an auction in the 10 s tumbling window they registered in:
    a 10 s windowed stream-stream join of persons with auctions re-keyed by seller,
    keeping pairs in the same tumbling window; records ``{id, name, start}``.

Each ``build_qN(out_topic)`` returns a ``Topology`` writing string keys and JSON values
to ``out_topic``; :data:`QUERIES` lists them with the topics they read.
"""
from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Callable

from streamlib import Consumed, JoinWindows, Produced, Serdes, StreamsBuilder, Suppressed, TimeWindows, Topology

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "nexmark_q6"))
import nexmark_q6  # noqa: E402

S, J = Serdes.string(), Serdes.json()
IN = Consumed.with_(S, J)
OUT = Produced.with_(S, J)
WINDOW = timedelta(seconds=10)
HOP = timedelta(seconds=2)
WINDOW_MS = 10_000
CLOSE_EVERY_MS, LAST_N = nexmark_q6.CLOSE_EVERY_MS, nexmark_q6.LAST_N


def build_q0(out: str) -> Topology:
    builder = StreamsBuilder()
    builder.stream("bid", consumed=IN).to(out, produced=OUT)
    return builder.build()


def build_q1(out: str) -> Topology:
    builder = StreamsBuilder()
    (builder.stream("bid", consumed=IN)
     .map_values(lambda bid: {**bid, "price": bid["price"] * 908 // 1000})
     .to(out, produced=OUT))
    return builder.build()


def build_q2(out: str) -> Topology:
    builder = StreamsBuilder()
    (builder.stream("bid", consumed=IN)
     .filter(lambda _, bid: bid["auction"] % 123 == 0)
     .map_values(lambda bid: {"auction": bid["auction"], "price": bid["price"]})
     .to(out, produced=OUT))
    return builder.build()


def build_q3(out: str) -> Topology:
    builder = StreamsBuilder()
    persons = builder.table("person", consumed=IN).filter(lambda _, p: p["state"] in ("OR", "ID", "CA"))
    auctions = builder.table("auction", consumed=IN).filter(lambda _, a: a["category"] == 10)
    (auctions.join(persons, lambda a, p: {"name": p["name"], "city": p["city"], "state": p["state"],
                                          "id": a["id"]},
                   foreign_key_extractor=lambda a: str(a["seller"]))
     .to_stream().to(out, produced=OUT))
    return builder.build()


def _bid_in_auction(bid: dict, auction: dict):
    """A bid-auction join's value: the auction's category and the bid's price if the
    bid was made while the auction ran, else None."""
    if auction["dateTime"] <= bid["dateTime"] <= auction["expires"]:
        return {"category": auction["category"], "price": bid["price"]}
    return None


def _higher(a: dict, b: dict) -> dict:
    return a if a["price"] >= b["price"] else b


def _add_price(_key, price, agg):
    return {"sum": agg["sum"] + price, "count": agg["count"] + 1}


def _subtract_price(_key, price, agg):
    return {"sum": agg["sum"] - price, "count": agg["count"] - 1}


def build_q4(out: str) -> Topology:
    builder = StreamsBuilder()
    auctions = builder.table("auction", consumed=IN)
    winning = (builder.stream("bid", consumed=IN)
               .join(auctions, _bid_in_auction)
               .filter(lambda _, won: won is not None)
               .group_by_key().reduce(_higher))
    (winning.group_by(lambda _, won: (str(won["category"]), won["price"]))
     .aggregate(lambda: {"sum": 0, "count": 0}, _add_price, _subtract_price)
     .filter(lambda _, agg: agg["count"] > 0)
     .map_values(lambda agg: agg["sum"] / agg["count"])
     .to_stream().to(out, produced=OUT))
    return builder.build()


def _more_bids(a: dict, b: dict) -> dict:
    return a if (a["num"], a["auction"]) >= (b["num"], b["auction"]) else b


def build_q5(out: str) -> Topology:
    builder = StreamsBuilder()
    counts = (builder.stream("bid", consumed=IN).group_by_key()
              .windowed_by(TimeWindows.of(WINDOW).advance_by(HOP)).count()
              .suppress(Suppressed.until_window_closes()))
    (counts.to_stream()
     .map(lambda wk, num: (str(wk.window.start), {"auction": int(wk.key), "num": num}))
     .group_by_key().reduce(_more_bids)
     .to_stream().to(out, produced=OUT))
    return builder.build()


# q6 is the Processor API example; the benchmark runs it as users run the example.
build_q6 = nexmark_q6.build_topology


def _highest(a: dict, b: dict) -> dict:
    rank = lambda bid: (bid["price"], bid["bidder"], bid["auction"])  # noqa: E731
    return a if rank(a) >= rank(b) else b


def build_q7(out: str) -> Topology:
    builder = StreamsBuilder()
    (builder.stream("bid", consumed=IN)
     .group_by(lambda _k, _bid: "highest")
     .windowed_by(TimeWindows.of(WINDOW)).reduce(_highest)
     .suppress(Suppressed.until_window_closes())
     .to_stream()
     .map(lambda wk, bid: (str(wk.window.start), bid))
     .to(out, produced=OUT))
    return builder.build()


def _same_window(person: dict, auction: dict):
    start = person["dateTime"] - person["dateTime"] % WINDOW_MS
    if auction["dateTime"] - auction["dateTime"] % WINDOW_MS != start:
        return None
    return {"id": person["id"], "name": person["name"], "start": start}


def build_q8(out: str) -> Topology:
    builder = StreamsBuilder()
    persons = builder.stream("person", consumed=IN)
    auctions = builder.stream("auction", consumed=IN).select_key(lambda _, a: str(a["seller"]))
    (persons.join(auctions, _same_window, JoinWindows.of_time_difference(WINDOW))
     .filter(lambda _, row: row is not None)
     .to(out, produced=OUT))
    return builder.build()


#: name -> (topology builder, topics it reads)
QUERIES: dict[str, tuple[Callable[[str], Topology], tuple[str, ...]]] = {
    "q0": (build_q0, ("bid",)),
    "q1": (build_q1, ("bid",)),
    "q2": (build_q2, ("bid",)),
    "q3": (build_q3, ("person", "auction")),
    "q4": (build_q4, ("auction", "bid")),
    "q5": (build_q5, ("bid",)),
    "q6": (build_q6, ("auction", "bid")),
    "q7": (build_q7, ("bid",)),
    "q8": (build_q8, ("person", "auction")),
}


#: string keys and JSON values by default (Kafka Streams' ``default.key.serde``/``default.value.serde``),
#: so repartitions and stores need no serde of their own; the same for every query
streams_config = nexmark_q6.streams_config
