"""Kafka Streams itself decides the parity soak's deliberate differences (docs/semantics.md,
"Deliberate differences from TopologyTestDriver"): each case of
``tests/spark/test_parity_topologies.py`` run by a KafkaStreams application on a broker
(``tests/oracle/.../CachedRuns.java``), one commit per run as one Spark batch, gives
Spark's result with record caching and the driver's without (or, for the self-join, the one
result of Spark and the driver either way, as Kafka's own TopologyTestDriver does)."""
from __future__ import annotations

import pytest

from kafka_streams_cached import kafka_streams_runs_at_once

CACHE = 10 * 1024 * 1024


def rec(topic: str, key, value, timestamp: int, partition: int = 0) -> dict:
    return {"topic": topic, "partition": partition, "key": key, "value": value, "timestamp": timestamp}


def final(answer: dict) -> dict:
    table = {}
    for key, value, _ in answer["outputs"]:
        table[key] = value
    return {k: v for k, v in table.items() if v is not None}


def test_an_inner_table_join_keeps_the_result_of_rows_both_deleted_in_one_commit(kafka_bootstrap):
    """Run 1 joins b; run 2 deletes both rows in one commit: with caching nothing is
    forwarded (Spark's result), without it the delete (the driver's)."""
    runs = [[rec("t1", "b", "c", 2002), rec("t2", "b", "b-row", 3)],
            [rec("t1", "b", None, 10002), rec("t2", "b", None, 11003)]]
    cached, uncached = kafka_streams_runs_at_once((kafka_bootstrap, "t1.join(t2)", runs, CACHE),
                                                  (kafka_bootstrap, "t1.join(t2)", runs, 0))
    assert cached["outputs"] == [["b", "c|b-row", 2002]] and cached["store"] == {"b": "c|b-row"}
    assert uncached["outputs"] == [["b", "c|b-row", 2002], ["b", None, 10002]] and uncached["store"] == {}


def test_a_foreign_key_self_join_drops_the_stale_answer(kafka_bootstrap):
    """a's change to c: the answer for its old value is dropped as stale (with the null
    key, two records dropped), in Kafka's TopologyTestDriver and with caching; never
    ``a|c`` (which our driver emitted before it applied left values as written)."""
    runs = [[rec("t2", "a", "a", 6003), rec("t2", "b", "b", 6003), rec("t2", None, "a", 15003, partition=1)],
            [rec("t2", "a", "c", 28003)]]
    expected = [["a", "a|a", 6003], ["a", None, 28003]]
    for answer in kafka_streams_runs_at_once(("test-driver", "t2.join(t2.filter.filter, fk)", runs, 0),
                                             (kafka_bootstrap, "t2.join(t2.filter.filter, fk)", runs, CACHE)):
        assert answer["outputs"] == expected and answer["store"] == {} and answer["dropped"] == 2


def test_a_foreign_key_answer_from_a_row_set_and_deleted_in_one_commit_stays(kafka_bootstrap):
    """As a Spark batch's stages: t1's records in one commit, then t2's with the
    subscription that commit wrote. t2's a is set, the subscription answered (a|a), a
    deleted, all in one commit: with caching the delete is never forwarded and a|a stays
    (Spark's result); without caching it is retracted (the driver's)."""
    t1 = [rec("t1", "a", "a", ts) for ts in (24002, 15002, 19002, 22002, 18002)]
    t2 = [rec("t2", "a", v, ts) for v, ts in (("a", 3), ("a", 3), ("a", 3), ("a", 28003), ("a", 3), ("a", 3),
                                              (None, 3))]
    runs = [{"records": t1, "inputs_only": True}, t2]
    cached, uncached = kafka_streams_runs_at_once((kafka_bootstrap, "t1.filter.join(t2.filter, fk)", runs, CACHE),
                                                  (kafka_bootstrap, "t1.filter.join(t2.filter, fk)", runs, 0))
    assert final(cached) == {"a": "a|a"} and cached["store"] == {"a": "a|a"}
    assert final(uncached) == {} and uncached["store"] == {}


def test_a_foreign_key_answer_for_a_left_value_of_the_same_commit_is_never_stale(kafka_bootstrap):
    """The parity soak's batch-cut case (``tests/spark/test_parity_batches.py``, batches of
    7 records), one run per Spark batch: orders (t1) joined by foreign key with customers
    (t2) filtered. In run 2 o1 goes d -> c -> d -> a while customer a is deleted. Kafka
    Streams updates the left table's store before it sends a subscription, and with
    caching sends one subscription per commit, so no answer is stale, in one commit per
    run or in a Spark batch's stages: ``dropped`` 0, as the driver (Spark dropped 2 as
    ``stale_response``). t1's filter drops nothing here: the soak's customer value ``y``
    is ``b`` here and its customer ``b`` is ``c``."""
    orders = [[rec("t1", "o2", "c", 387), rec("t1", "o1", "d", 142, partition=1)],
              [rec("t1", k, v, ts, partition=1) for k, v, ts in (("o3", "d", 4567), ("o1", "c", 2062),
                                                                 ("o1", "d", 842), ("o1", "a", 4368))]]
    customers = [[rec("t2", "a", "x", 4056), rec("t2", "a", "x", 3438), rec("t2", "d", "b", 2224, partition=1)],
                 [rec("t2", "c", "b", 141), rec("t2", "a", "x", 252), rec("t2", "a", None, 2524)]]
    batches = [customers[0] + orders[0], customers[1] + orders[1]]
    # the driver's order: by timestamp over the topics, each topic in Kafka Streams' order
    in_driver_order = [[orders[0][1], orders[0][0], customers[0][2], *customers[0][:2], *customers[1], *orders[1]]]
    staged = [batches[0], {"records": orders[1], "inputs_only": True}, customers[1]]
    topology = "t1.filter.join(t2.filter, fk)"
    answers = dict(zip(["Kafka's TopologyTestDriver", "cached", "cached, as a batch's stages"],
                       kafka_streams_runs_at_once(("test-driver", topology, in_driver_order, 0),
                                                  (kafka_bootstrap, topology, batches, CACHE),
                                                  (kafka_bootstrap, topology, staged, CACHE))))
    for how, answer in answers.items():
        assert final(answer) == {} and answer["store"] == {} and answer["dropped"] == 0, (how, answer)


def test_a_foreign_key_self_join_of_a_row_set_and_deleted_in_one_commit_sends_nothing(kafka_bootstrap):
    """The parity soak's case (2026-11-29): t1's b is set to c and deleted in one commit,
    b being a left row (t1.filter.filter, foreign key = value) and, mapped, a right row
    (t1.filter.map_values). With caching t1's store forwards nothing for a row absent before
    and after the commit: no subscription, no answer, no output, nothing dropped. Kafka's
    TopologyTestDriver (no caching) emits b -> c|null then the delete, nothing dropped (our
    driver's result). Spark, whose t1 forwards every update at once because a store below it
    is looked up (``Topology.forwards_at_once``), sends the subscription and drops its answer
    as stale (``stale_response`` 1): neither."""
    runs = [[rec("t1", "b", "c", 30002), rec("t1", "b", None, 9002)]]
    topology = "t1.filter.filter.leftJoin(t1.filter.mapValues, fk)"
    uncached, cached = kafka_streams_runs_at_once(("test-driver", topology, runs, 0),
                                                  (kafka_bootstrap, topology, runs, CACHE))
    assert uncached["outputs"] == [["b", "c|null", 30002], ["b", None, 9002]] and uncached["dropped"] == 0
    assert cached["outputs"] == [] and cached["store"] == {} and cached["dropped"] == 0


@pytest.mark.parametrize("a_first", [("c", 28002, 1002, 0), ("a", 28002, 11002, 1)], ids=["drops", "stores"])
def test_a_foreign_key_self_join_of_the_table_mapped_then_filtered_ends_empty(kafka_bootstrap, a_first):
    """The parity soak's second self-join case (2026-11-29,
    ``tests/spark/test_parity_topologies.py::test_a_foreign_key_self_join_whose_right_side_maps_the_table_first``):
    t1.filter.filter joined by foreign key with t1.mapValues.filter; run 1 sets c -> b, run 2
    (one commit) sets a twice, c -> a and deletes c. Kafka's TopologyTestDriver gives our
    driver's records and drops (in ``stores`` an answer to a's old value, produced with its
    new one, is stale); cached, one commit per run, Kafka Streams sends one subscription,
    emits no result and drops nothing. All end empty."""
    value, first, second, stale = a_first
    runs = [[rec("t1", "c", "b", 2)],
            [rec("t1", "a", value, first), rec("t1", "a", "c", second), rec("t1", "c", "a", 21002),
             rec("t1", "c", None, 25002)]]
    topology = "t1.filter.filter.join(t1.mapValues.filter, fk)"
    uncached, cached = kafka_streams_runs_at_once(("test-driver", topology, runs, 0),
                                                  (kafka_bootstrap, topology, runs, CACHE))
    ours = [["a", "c|c", first]] if value == "c" else []
    assert uncached["outputs"] == ours + [["a", "c|c", second], ["a", None, 21002], ["c", "a|a", 21002],
                                          ["c", None, 25002]]
    assert uncached["store"] == {} and uncached["dropped"] == stale
    assert final(cached) == {} and cached["store"] == {} and cached["dropped"] == 0, cached
