"""benchmarks/nexmark: each query q0-q8 against the plain-Python computation of the same
query on the same generated events, under TopologyTestDriver and through Spark over
several micro-batches, and Spark's own queries (benchmarks/nexmark/spark_native.py) on
the same topics."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

NEXMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "nexmark"
sys.path.insert(0, str(NEXMARK))

import generator  # noqa: E402
import queries  # noqa: E402
import reference  # noqa: E402
from streamlib import Serdes, TopologyTestDriver  # noqa: E402

# 20 s of event time at 100 events/s; 20 auctions in flight, so auctions last seconds and
# q6 closes some; q5 closes 9 hopping windows, q7 one tumbling window.
CONFIG = generator.NexmarkConfig(events=2_000, rate=100, num_in_flight_auctions=20)
EVENTS = list(generator.generate(CONFIG))
S, J = Serdes.string(), Serdes.json()


def test_the_generator_is_deterministic_and_keeps_the_reference_proportions():
    assert list(generator.generate(CONFIG)) == EVENTS
    assert Counter(e.topic for e in EVENTS) == {"person": 40, "auction": 120, "bid": 1840}   # 1:3:46
    assert [e.timestamp for e in EVENTS] == sorted({e.timestamp for e in EVENTS})   # one event per ms at most
    auctions = [e.value for e in EVENTS if e.topic == "auction"]
    assert [a["id"] for a in auctions] == list(range(1000, 1120))
    assert all(a["dateTime"] < a["expires"] and 10 <= a["category"] <= 14 for a in auctions)
    hot = Counter(e.value["auction"] for e in EVENTS if e.topic == "bid").most_common(1)[0][1]
    assert hot > 1840 / 10   # half of the bids go to the hot auction of the last 100


def test_every_query_has_results_to_compare():
    assert all(reference.compute(q, EVENTS) for q in queries.QUERIES)


def run_driver(query: str, events) -> list:
    build, topics = queries.QUERIES[query]
    with TopologyTestDriver(build("out"), config=queries.streams_config("nexmark-test")) as driver:
        inputs = {topic: driver.create_input_topic(topic, S, J) for topic in topics}
        out = driver.create_output_topic("out", S, J)
        for event in events:
            if event.topic in inputs:
                inputs[event.topic].pipe_input(event.key, event.value, event.timestamp)
        return reference.normal_form(query, out.read_key_values_to_list())


@pytest.mark.parametrize("query", list(queries.QUERIES))
def test_query_under_the_driver_equals_the_plain_computation(query):
    assert run_driver(query, EVENTS) == reference.compute(query, EVENTS)


def test_q6_closes_an_auction_only_once_stream_time_passes_its_expiry():
    auction = generator.Event("auction", "1000", {"id": 1000, "seller": 7, "dateTime": 0, "expires": 1_500,
                                                  "category": 10}, 0)
    bids = [generator.Event("bid", "1000", {"auction": 1000, "bidder": 1, "price": p, "dateTime": t}, t)
            for p, t in ((5, 100), (9, 1_500), (99, 1_501))]      # the last one is too late
    assert run_driver("q6", [auction, *bids]) == []              # stream time 1.501 s: not closed yet
    tick = generator.Event("bid", "2000", {"auction": 2000, "bidder": 1, "price": 1, "dateTime": 2_000}, 2_000)
    assert run_driver("q6", [auction, *bids, tick]) == [("7", "9.0")]


@pytest.fixture(scope="module")
def topics(tmp_path_factory):
    """The events on a local log, 4 partitions a topic."""
    bootstrap = f"local://{tmp_path_factory.mktemp('nexmark') / 'log'}"
    generator.write_events(bootstrap, EVENTS, partitions=4)
    return bootstrap


@pytest.fixture(scope="module")
def run():
    import run as runner   # benchmarks/nexmark/run.py: the engines as the benchmark runs them
    return runner


@pytest.mark.parametrize("query", list(queries.QUERIES))
def test_query_through_spark_in_micro_batches_equals_the_plain_computation(spark, topics, run, query, tmp_path):
    _, out = run.run_streamlib(spark, query, topics, str(tmp_path), max_records=500)
    assert reference.normal_form(query, run.read_output(topics, out)) == reference.compute(query, EVENTS)


@pytest.fixture
def no_data_batches(spark):
    """Spark's no-data micro-batches, which emit what the last watermark closes (the test
    session turns them off; a Spark user has them on)."""
    key = "spark.sql.streaming.noDataMicroBatches.enabled"
    before = spark.conf.get(key)
    spark.conf.set(key, "true")
    yield
    spark.conf.set(key, before)


@pytest.mark.parametrize("query", ["q2", "q3", "q5", "q7", "q8"])
def test_sparks_own_query_equals_the_plain_computation(spark, topics, run, no_data_batches, query, tmp_path):
    _, out = run.run_spark(spark, query, topics, str(tmp_path), max_records=500)
    assert reference.normal_form(query, run.read_output(topics, out)) == reference.compute(query, EVENTS)

