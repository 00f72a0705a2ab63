"""A deterministic Nexmark event generator, and writing its events as topics.

Modelled on the reference generator of nexmark/nexmark (``NexmarkGenerator``,
``GeneratorConfig`` and the ``model/*Generator`` classes of its Flink module), read,
not copied: events are numbered 0, 1, 2, ...; of every 50 consecutive events 1 is a
new person, 3 are new auctions and 46 are bids (the reference's proportions 1:3:46);
person and auction ids start at 1000 and grow with the event number as the
reference's ``lastBase0PersonId``/``lastBase0AuctionId``; categories are 10-14.
Bids go to a hot auction (the first of the last 100 auctions) with probability 1/2 and
are made by a hot bidder (the second of the last 100 persons) with probability 3/4,
auctions are sold by a hot seller (the first of the last 100 persons) with
probability 3/4, the others pick among the last 1000 active persons or the last 100
in-flight auctions plus 10 ids not created yet (so a bid or auction may name a person
or auction that appears later, as in the reference). Prices are
``round(10 ** (6 u) * 100)`` cents. An auction runs for ``1 + uniform(0, 2 h)`` ms,
where ``h`` is the event time until 100 more auctions are due (the reference's
``nextAuctionLengthMs``): auctions are ~100 in flight.

Where this approximates the reference:

- one seeded ``random.Random`` draws all events in order (the reference seeds a new
  ``Random`` per event id); the draws are the reference's kinds, not its exact values;
- the default event-time rate is 1,000 events/s (the reference's default is 10,000/s)
  so that no two events share a millisecond: which of two events in different topics
  with the same timestamp comes first is then never a question for any engine;
- no out-of-order groups, no rate shapes, and no ``extra`` padding (records are
  100-200 bytes of JSON, smaller than the reference's 200/500/100-byte averages);
  bids carry no ``channel``/``url``.

Events are written as three topics: ``person`` keyed by id, ``auction`` keyed by id,
``bid`` keyed by its auction's id (so bids are co-partitioned with auctions), JSON
values, record timestamp = the event's ``dateTime``. Any streamlib backend works:
``local://PATH`` (the embedded log) or ``kafka://HOST:PORT``.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Iterator, NamedTuple

PERSON, AUCTION, BID = "person", "auction", "bid"
TOPICS = (PERSON, AUCTION, BID)
FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
HOT_GROUP = 100            # hot ids are the first (second for bidders) of each 100
ID_LEAD = 10               # ids not created yet that bids and auctions may name
STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond",
          "Seattle", "Kent", "Cheyenne")
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")


@dataclass(frozen=True)
class NexmarkConfig:
    """The generator's parameters; the defaults are the reference's except ``rate``."""

    events: int = 10_000
    seed: int = 7
    rate: int = 1_000                  # events per second of event time
    base_time: int = 1_700_000_000_000  # epoch ms of event 0
    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46
    num_active_people: int = 1_000
    num_in_flight_auctions: int = 100
    hot_auction_ratio: int = 2
    hot_bidders_ratio: int = 4
    hot_sellers_ratio: int = 4

    @property
    def total_proportion(self) -> int:
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    def timestamp(self, event_number: int) -> int:
        return self.base_time + event_number * 1000 // self.rate


class Event(NamedTuple):
    """One generated event: its topic, key, JSON-able value and timestamp (ms)."""

    topic: str
    key: str
    value: dict
    timestamp: int


def last_person_id(c: NexmarkConfig, event_id: int) -> int:
    """The newest person id (base 0) at ``event_id``: the current one for a person event."""
    epoch, offset = divmod(event_id, c.total_proportion)
    return epoch * c.person_proportion + min(offset, c.person_proportion - 1)


def last_auction_id(c: NexmarkConfig, event_id: int) -> int:
    """The newest auction id (base 0) at ``event_id``: the current one for an auction event."""
    epoch, offset = divmod(event_id, c.total_proportion)
    if offset < c.person_proportion:
        epoch, offset = epoch - 1, c.auction_proportion - 1
    else:
        offset = min(offset - c.person_proportion, c.auction_proportion - 1)
    return epoch * c.auction_proportion + offset


def _some_person(c: NexmarkConfig, rng: random.Random, event_id: int) -> int:
    people = last_person_id(c, event_id) + 1
    active = min(people, c.num_active_people)
    return people - active + rng.randrange(active + ID_LEAD)


def _some_auction(c: NexmarkConfig, rng: random.Random, event_id: int) -> int:
    newest = last_auction_id(c, event_id)
    oldest = max(newest - c.num_in_flight_auctions, 0)
    return oldest + rng.randrange(newest - oldest + 1 + ID_LEAD)


def _price(rng: random.Random) -> int:
    return round(10 ** (rng.random() * 6) * 100)


def _word(rng: random.Random, length: int) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(length))


def _person(c: NexmarkConfig, rng: random.Random, event_id: int, ts: int) -> Event:
    pid = last_person_id(c, event_id) + FIRST_PERSON_ID
    value = {"id": pid, "name": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
             "emailAddress": f"{_word(rng, 7)}@{_word(rng, 5)}.com",
             "creditCard": " ".join(f"{rng.randrange(10_000):04d}" for _ in range(4)),
             "city": rng.choice(CITIES), "state": rng.choice(STATES), "dateTime": ts}
    return Event(PERSON, str(pid), value, ts)


def _auction(c: NexmarkConfig, rng: random.Random, event_id: int, ts: int) -> Event:
    aid = last_auction_id(c, event_id) + FIRST_AUCTION_ID
    if rng.randrange(c.hot_sellers_ratio) > 0:
        seller = last_person_id(c, event_id) // HOT_GROUP * HOT_GROUP
    else:
        seller = _some_person(c, rng, event_id)
    initial = _price(rng)
    ahead = c.num_in_flight_auctions * c.total_proportion // c.auction_proportion
    horizon = c.timestamp(event_id + ahead) - ts
    value = {"id": aid, "itemName": _word(rng, 8), "description": _word(rng, 16), "initialBid": initial,
             "reserve": initial + _price(rng), "dateTime": ts,
             "expires": ts + 1 + rng.randrange(max(2 * horizon, 1)),
             "seller": seller + FIRST_PERSON_ID,
             "category": FIRST_CATEGORY_ID + rng.randrange(NUM_CATEGORIES)}
    return Event(AUCTION, str(aid), value, ts)


def _bid(c: NexmarkConfig, rng: random.Random, event_id: int, ts: int) -> Event:
    if rng.randrange(c.hot_auction_ratio) > 0:
        auction = last_auction_id(c, event_id) // HOT_GROUP * HOT_GROUP
    else:
        auction = _some_auction(c, rng, event_id)
    if rng.randrange(c.hot_bidders_ratio) > 0:
        bidder = last_person_id(c, event_id) // HOT_GROUP * HOT_GROUP + 1
    else:
        bidder = _some_person(c, rng, event_id)
    auction += FIRST_AUCTION_ID
    value = {"auction": auction, "bidder": bidder + FIRST_PERSON_ID, "price": _price(rng), "dateTime": ts}
    return Event(BID, str(auction), value, ts)


def generate(config: NexmarkConfig) -> Iterator[Event]:
    """The events of ``config`` in event-number (and so timestamp) order."""
    rng = random.Random(config.seed)
    persons, auctions = config.person_proportion, config.person_proportion + config.auction_proportion
    for event_id in range(config.events):
        ts = config.timestamp(event_id)
        offset = event_id % config.total_proportion
        make = _person if offset < persons else _auction if offset < auctions else _bid
        yield make(config, rng, event_id, ts)


def encode(value: dict) -> bytes:
    """An event's value as bytes: compact JSON, what ``Serdes.json()`` writes and reads."""
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def write_events(bootstrap: str, events: list[Event], partitions: int = 4) -> dict[str, int]:
    """Create the three topics (``partitions`` each) on ``bootstrap`` and produce
    ``events`` to them (the key's murmur2 picks the partition); returns records per topic."""
    from streamlib.topics import open_backend

    backend = open_backend(bootstrap)
    try:
        for topic in TOPICS:
            backend.create_topic(topic, partitions=partitions)
        counts = dict.fromkeys(TOPICS, 0)
        for event in events:
            backend.produce(event.topic, key=event.key.encode("utf-8"), value=encode(event.value),
                            timestamp=event.timestamp)
            counts[event.topic] += 1
        backend.flush()
    finally:
        backend.close()
    return counts
