"""Helpers for the windowed-aggregation tests ported from Kafka Streams (TopologyTestDriver based)."""
from __future__ import annotations

import random

from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder, Window, Windowed

from streams_helpers import S, driver_for, kvt


class SuppressOutputs:
    """SuppressScenarioTest's topics on a driver: ``input`` (String keys and values),
    ``output-raw`` and ``output-suppressed`` (String keys, Long values)."""

    def __init__(self, driver):
        self.inp = driver.create_input_topic("input", S, S)
        self.raw = driver.create_output_topic("output-raw", S, Serdes.long())
        self.suppressed = driver.create_output_topic("output-suppressed", S, Serdes.long())

    def drain(self) -> tuple[list, list]:
        """(key, value, timestamp) of both outputs since the last drain: (raw, suppressed)."""
        return kvt(self.raw.read_records_to_list()), kvt(self.suppressed.read_records_to_list())


def string_adder(key, value, agg):
    """Kafka's MockAggregator.TOSTRING_ADDER: agg + "+" + value."""
    return f"{agg}+{value}"


def string_init():
    """Kafka's MockInitializer.STRING_INIT."""
    return "0"


def wkvt(key, start, end, value, ts):
    """Kafka's KeyValueTimestamp<>(new Windowed<>(key, new TimeWindow(start, end)), value, ts)."""
    return (Windowed(key, Window(start, end)), value, ts)


def windowed_stream(builder: StreamsBuilder, topic: str = "topic1"):
    return builder.stream(topic, consumed=Consumed.with_(S, S)).group_by_key()


def to_output(table, topic: str, window_key_serde, value_serde=S):
    table.to_stream().to(topic, produced=Produced.with_(window_key_serde, value_serde))


def store(name: str, value_serde=S) -> Materialized:
    return Materialized.as_(name).with_value_serde(value_serde)


def run(builder, inputs, outputs, **config):
    """Pipe ``inputs`` [(topic, key, value, ts)] and return ({topic: [(key, value, ts)]}, driver
    metrics, the driver's stores as read by ``inspect(driver)``) for ``outputs`` {topic: (kserde, vserde)}."""
    with driver_for(builder, **config) as driver:
        topics = {}
        for topic, key, value, ts in inputs:
            if topic not in topics:
                topics[topic] = driver.create_input_topic(topic, S, S)
            topics[topic].pipe_input(key, value, ts)
        results = {t: kvt(driver.create_output_topic(t, k, v).read_records_to_list())
                   for t, (k, v) in outputs.items()}
        return results, driver.metrics()


def time_windowed(size: int):
    return Serdes.time_windowed(S, size)


def random_stream(rng: random.Random, n: int, keys: int, diff: int, grace: int):
    """``n`` records (key, value, ts) over ``keys`` keys: mostly in order, some up to grace/2 out
    of order (all their windows still open), about 3% far too late (every window of theirs
    closed, for windows at most ``diff`` long after the record)."""
    records, observed = [], 0
    for i in range(n):
        roll = rng.random()
        if roll < 0.03 and observed - grace - diff - 1 >= 0:
            ts = rng.randint(0, observed - grace - diff - 1)
        elif roll < 0.35:
            ts = max(0, observed - rng.randint(0, grace // 2))
        else:
            ts = observed + rng.randint(0, diff // 2)
        observed = max(observed, ts)
        records.append((f"k{rng.randrange(keys)}", f"{i:04d}", ts))
    return records
