"""Nexmark q0-q8 computed in plain Python from the generated events: what each engine's
output must equal. See :mod:`queries` for the definitions.

Every query's result is put in one comparable form by :func:`normal_form`: a sorted
list of ``(key, value)`` for a stream of results (q0-q2; q8 without duplicates), and the
final table (last value per key, ``None`` deletes) as a sorted list for the others,
with averages rounded to 6 decimals.
"""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Iterable

from generator import AUCTION, BID, PERSON, Event
from queries import CLOSE_EVERY_MS, LAST_N, WINDOW_MS

HOP_MS = 2_000
STREAMS = {"q0", "q1", "q2"}
DISTINCT = {"q8"}
AVERAGES = {"q4", "q6"}


def normal_form(query: str, records: Iterable[tuple[str, Any]]) -> list[tuple[str, str]]:
    """``records`` (key, decoded JSON value) of ``query``'s output topic, in the order
    written, as a sorted list of (key, canonical JSON)."""
    def canonical(value):
        if query in AVERAGES and value is not None:
            value = round(value, 6)
        return json.dumps(value, sort_keys=True)

    if query in STREAMS:
        return sorted((k, canonical(v)) for k, v in records)
    if query in DISTINCT:
        return sorted({(k, canonical(v)) for k, v in records})
    table: dict[str, Any] = {}
    for key, value in records:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    return sorted((k, canonical(v)) for k, v in table.items())


def _by_topic(events: list[Event]) -> dict[str, list[Event]]:
    topics: dict[str, list[Event]] = {PERSON: [], AUCTION: [], BID: []}
    for event in events:
        topics[event.topic].append(event)
    return topics


def _winning_prices(auctions: list[dict], bids: list[dict]) -> dict[int, int]:
    """auction id -> its highest bid made while it ran."""
    by_id = {a["id"]: a for a in auctions}
    best: dict[int, int] = {}
    for bid in bids:
        a = by_id.get(bid["auction"])
        if a is not None and a["dateTime"] <= bid["dateTime"] <= a["expires"]:
            best[a["id"]] = max(best.get(a["id"], bid["price"]), bid["price"])
    return best


def _closed_windows(times: list[int], size: int, advance: int, stream_time: int) -> dict[int, list[int]]:
    """window start -> the indexes of ``times`` in it, for windows closed at ``stream_time``
    (end <= stream time: Kafka Streams' rule with no grace)."""
    windows: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(times):
        start = max(t - size + advance, 0) // advance * advance
        while start <= t:
            if start + size <= stream_time:
                windows[start].append(i)
            start += advance
    return windows


def compute(query: str, events: list[Event]) -> list[tuple[str, str]]:
    """``query``'s result on ``events``, in :func:`normal_form`."""
    topics = _by_topic(events)
    persons = [e.value for e in topics[PERSON]]
    auctions = [e.value for e in topics[AUCTION]]
    bids = [e.value for e in topics[BID]]
    rows: list[tuple[str, Any]]
    if query == "q0":
        rows = [(e.key, e.value) for e in topics[BID]]
    elif query == "q1":
        rows = [(e.key, {**e.value, "price": e.value["price"] * 908 // 1000}) for e in topics[BID]]
    elif query == "q2":
        rows = [(e.key, {"auction": b["auction"], "price": b["price"]})
                for e in topics[BID] if (b := e.value)["auction"] % 123 == 0]
    elif query == "q3":
        people = {p["id"]: p for p in persons if p["state"] in ("OR", "ID", "CA")}
        rows = [(str(a["id"]), {"name": p["name"], "city": p["city"], "state": p["state"], "id": a["id"]})
                for a in auctions if a["category"] == 10 and (p := people.get(a["seller"])) is not None]
    elif query == "q4":
        category = {a["id"]: a["category"] for a in auctions}
        prices: dict[int, list[int]] = defaultdict(list)
        for auction, price in _winning_prices(auctions, bids).items():
            prices[category[auction]].append(price)
        rows = [(str(c), sum(p) / len(p)) for c, p in prices.items()]
    elif query == "q5":
        stream_time = max(b["dateTime"] for b in bids)
        windows = _closed_windows([b["dateTime"] for b in bids], WINDOW_MS, HOP_MS, stream_time)
        rows = []
        for start, members in windows.items():
            counts: dict[int, int] = defaultdict(int)
            for i in members:
                counts[bids[i]["auction"]] += 1
            num, auction = max((n, a) for a, n in counts.items())
            rows.append((str(start), {"auction": auction, "num": num}))
    elif query == "q6":
        stream_time = max(e["dateTime"] for e in auctions + bids)
        cutoff = stream_time - stream_time % CLOSE_EVERY_MS
        winning = _winning_prices(auctions, bids)
        closed = sorted((a["expires"], a["id"], a["seller"]) for a in auctions
                        if a["expires"] < cutoff and a["id"] in winning)
        last: dict[int, list[int]] = defaultdict(list)
        for _, auction, seller in closed:
            last[seller] = (last[seller] + [winning[auction]])[-LAST_N:]
        rows = [(str(s), sum(p) / len(p)) for s, p in last.items()]
    elif query == "q7":
        stream_time = max(b["dateTime"] for b in bids)
        windows = _closed_windows([b["dateTime"] for b in bids], WINDOW_MS, WINDOW_MS, stream_time)
        rows = [(str(start), max((bids[i] for i in members),
                                 key=lambda b: (b["price"], b["bidder"], b["auction"])))
                for start, members in windows.items()]
    elif query == "q8":
        starts = {}
        for a in auctions:
            starts.setdefault(a["seller"], set()).add(a["dateTime"] - a["dateTime"] % WINDOW_MS)
        rows = [(str(p["id"]), {"id": p["id"], "name": p["name"], "start": start})
                for p in persons
                if (start := p["dateTime"] - p["dateTime"] % WINDOW_MS) in starts.get(p["id"], ())]
    else:
        raise ValueError(f"unknown Nexmark query {query!r} (q0-q8)")
    return normal_form(query, rows)
