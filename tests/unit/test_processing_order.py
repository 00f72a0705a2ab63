"""The order a task processes a batch's rows in (``streamlib.runtime.order``): offsets
within a partition, and across partitions the head with the smallest timestamp next,
ties to the partition that sorts first (Kafka Streams' ``PartitionGroup``)."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest

from streamlib.runtime.order import processing_order


def rows(records: list[tuple[str, int, int, int]]) -> pa.Table:
    """A table of (topic, partition, offset, timestamp) rows, in the given order."""
    topic, partition, offset, timestamp = zip(*records)
    return pa.table({"topic": pa.array(topic, pa.string()), "partition": pa.array(partition, pa.int32()),
                     "offset": pa.array(offset, pa.int64()), "timestamp": pa.array(timestamp, pa.int64())})


def greedy_order(records: list[tuple[str, int, int, int]]) -> list[int]:
    """The rule as Kafka states it, one step at a time: of the partitions' next records,
    take the one with the smallest timestamp; on a tie, the partition that sorts first."""
    heads: dict[tuple[str, int], list[int]] = {}
    for index in sorted(range(len(records)), key=lambda i: records[i][:3]):
        heads.setdefault(records[index][:2], []).append(index)
    order = []
    while heads:
        origin = min(heads, key=lambda o: (records[heads[o][0]][3], o))
        order.append(heads[origin].pop(0))
        if not heads[origin]:
            del heads[origin]
    return order


def test_one_partition_goes_by_offset_whatever_the_timestamps():
    table = rows([("t", 0, 2, 5), ("t", 0, 0, 9), ("t", 0, 1, 1)])
    assert processing_order(table).tolist() == [1, 2, 0]


def test_the_smallest_head_goes_first_and_a_late_record_waits_behind_its_partition():
    # partition 0: 10 then a late 2; partition 1: 5. The late record cannot pass the 10
    # ahead of it, so the 5 of partition 1 goes first.
    table = rows([("t", 0, 0, 10), ("t", 0, 1, 2), ("t", 1, 0, 5)])
    assert processing_order(table).tolist() == [2, 0, 1]


def test_ties_go_to_the_partition_that_sorts_first_topic_before_partition():
    table = rows([("b", 0, 0, 7), ("a", 1, 0, 7), ("a", 0, 0, 7), ("a", 1, 1, 3)])
    assert processing_order(table).tolist() == [2, 1, 3, 0]


@pytest.mark.parametrize("seed", range(40))
def test_random_batches_follow_the_greedy_rule_exactly(seed):
    rng = random.Random(seed)
    origins = [(rng.choice("xyz"), rng.randrange(4)) for _ in range(rng.randrange(1, 6))]
    records, next_offset = [], {}
    for _ in range(rng.randrange(1, 200)):
        origin = rng.choice(origins)
        offset = next_offset[origin] = next_offset.get(origin, rng.randrange(100)) + rng.randrange(1, 3)
        # few distinct timestamps (many ties) and out-of-order ones (late records)
        records.append((*origin, offset, rng.randrange(-1, 12) * rng.choice([1, 1, 1000])))
    rng.shuffle(records)
    assert processing_order(rows(records)).tolist() == greedy_order(records)


def test_topics_taken_together_are_one_sequence_per_partition():
    """A foreign-key self join's left values and answers (``together``): offset order
    across the two topics, whatever their timestamps; other topics merge by timestamp."""
    table = rows([("l", 0, 0, 9), ("r", 0, 1, 2), ("l", 0, 2, 5), ("x", 0, 0, 4)])
    assert processing_order(table).tolist() == [1, 3, 0, 2]
    assert processing_order(table, frozenset({"l", "r"})).tolist() == [3, 0, 1, 2]
