"""The batch paths of the stream–table joins (``runtime.joined.JoinedBatch``, the
classic join; ``runtime.versioned_joined.VersionedJoinBatch``, with a grace period)
against per-record processing of the same rows, a property test: for random orders
and table updates (two partitions per topic, out of order, tombstones, key-less table
records, headers) over several batches, inner and left joins, with and without steps
after the join, with the table's updates cached and emitted or going nowhere, a task
gives the same output rows in the same order, the same store bytes, the same
changelog order and the same counters either way; and the batch path was taken. With a grace period, the late
table updates re-join buffered orders (corrections with the update header), and some
are older than the table's history (dropped, counted). Rows it cannot take (a stream
record without a key or value, undecodable bytes, a joiner that raises) go record by
record, with the same outcome."""
from __future__ import annotations

import random
from datetime import timedelta
from typing import Callable
from unittest import mock

import batch_helpers
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlib import Consumed, Joined, Materialized, Produced, Serdes, StreamsBuilder
from streamlib.processors.base import ProcessingError
from streamlib.processors.stores import TimestampedKeyValueStore
from streamlib.runtime.task import Task

S = Serdes.string()
HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def topology(left: bool, steps: bool, table_out: bool, joiner=None):
    builder = StreamsBuilder()
    table = builder.table("customers", consumed=Consumed.with_(S, S))
    if table_out:
        table.to_stream().to("table-out", produced=Produced.with_(S, S))
    orders = builder.stream("orders", consumed=Consumed.with_(S, S))
    joiner = joiner or (lambda order, customer: f"{order}|{customer}")
    joined = orders.left_join(table, joiner) if left else orders.join(table, joiner)
    if steps:
        joined = joined.map_values(str.upper).filter(lambda k, v: not v.endswith("3"))
    joined.to("out", produced=Produced.with_(S, S))
    return builder.build()


def grace_topology(left: bool, steps: bool, history_ms=None, joiner=None):
    builder = StreamsBuilder()
    materialized = None if history_ms is None else Materialized.as_versioned("versioned", history_ms)
    table = builder.table("customers", consumed=Consumed.with_(S, S), materialized=materialized)
    orders = builder.stream("orders", consumed=Consumed.with_(S, S))
    joiner = joiner or (lambda order, customer: f"{order}|{customer}")
    joined = Joined.with_(S, S, S, grace=timedelta(milliseconds=50))
    joined = orders.left_join(table, joiner, joined) if left else orders.join(table, joiner, joined)
    if steps:
        joined = joined.filter(lambda k, v: v is None or not v.endswith("3")).map_values(
            lambda v: None if v is None else v.upper())
    joined.to("out", produced=Produced.with_(S, S))
    return builder.build()


def rows(records: list[tuple]) -> pa.Table:
    """(topic, partition, offset, timestamp, key, value, headers) -> a task's input table."""
    return pa.table({
        "topic": pa.array([r[0] for r in records], pa.string()),
        "partition": pa.array([r[1] for r in records], pa.int32()),
        "offset": pa.array([r[2] for r in records], pa.int64()),
        "timestamp": pa.array([r[3] for r in records], pa.int64()),
        "key": pa.array([r[4] for r in records], pa.binary()),
        "value": pa.array([r[5] for r in records], pa.binary()),
        "headers": pa.array([[{"key": k, "value": v} for k, v in r[6]] for r in records], HEADER_TYPE),
    })


def random_batches(seed: int, batches: int = 4, per_batch: int = 60, keys: int = 5,
                   stream_nulls: bool = False) -> list[pa.Table]:
    rng = random.Random(seed)
    offsets = {}
    clock, out = 0, []
    for _ in range(batches):
        records = []
        for _ in range(per_batch):
            clock += rng.randint(0, 5)
            topic = "customers" if rng.random() < 0.35 else "orders"
            partition = rng.randrange(2)
            offset = offsets[(topic, partition)] = offsets.get((topic, partition), -1) + 1
            ts = max(0, clock - rng.choice([0, 0, 0, 20, 100]))
            key = f"k{rng.randrange(keys)}".encode()
            value = f"v{offset}".encode()
            if topic == "customers":
                key = None if rng.random() < 0.05 else key
                value = None if rng.random() < 0.15 else value
            elif stream_nulls and rng.random() < 0.1:
                key, value = (None, value) if rng.random() < 0.5 else (key, None)
            headers = [("h", str(offset).encode())] if rng.random() < 0.3 else []
            records.append((topic, partition, offset, ts, key, value, headers))
        out.append(rows(records))
    return out


def joined_whole(task: Task, table: pa.Table) -> Callable[[], int]:
    """Whether the join's batch path took ``table`` whole: its answer, kept as it runs."""
    run_batch, answers = task._joined.run, []

    def answered(rows):
        answers.append(run_batch(rows))
        return answers[-1]
    task._joined.run = answered
    return lambda: sum(answers)


def run(top, batches, tmp_path, name, batch_path, cache_max_bytes=1024, handler="fail"):
    """Every batch through one Task; ``batch_path`` False: per record. Returns the
    outputs per batch, the stores' bytes, the counters, the batches joined whole, and
    the key bytes each store write-back handed on, in order (the changelog's order)."""
    written, write_back = [], TimestampedKeyValueStore.write_back

    def recorded(store):
        written.append((store.name, list(store._dirty)))
        write_back(store)
    with mock.patch.object(TimestampedKeyValueStore, "write_back", recorded):
        result = batch_helpers.run(top, batches, tmp_path, name, batch_path, handler=handler,
                                   cache_max_bytes=cache_max_bytes, path="_joined", whole=joined_whole)
    return (*result, written)


def both_ways(top, batches, tmp_path, **options) -> tuple:
    expected = run(top, batches, tmp_path, "records", batch_path=False, **options)
    found = run(top, batches, tmp_path, "batch", batch_path=True, **options)
    assert found[0] == expected[0]
    assert found[1] == expected[1]
    assert found[2] == expected[2]
    assert found[4] == expected[4]
    return expected, found


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), left=st.booleans(), steps=st.booleans(), table_out=st.booleans(),
       cached=st.booleans(), keys=st.sampled_from([1, 3, 20]), batches=st.sampled_from([1, 3]))
def test_batch_join_equals_per_record_processing(tmp_path_factory, seed, left, steps, table_out, cached,
                                                 keys, batches):
    tmp_path = tmp_path_factory.mktemp("join")
    top = topology(left, steps, table_out)
    expected, found = both_ways(top, random_batches(seed, batches=batches, keys=keys), tmp_path,
                                cache_max_bytes=1024 if cached else 0)
    if cached or not table_out:   # the table's updates emitted at the commit, or nowhere
        assert found[3] == batches
    else:                         # emitted between the orders: record by record
        assert found[3] == 0
    assert sum(map(len, expected[0])) > 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), left=st.booleans(), steps=st.booleans(),
       history=st.sampled_from([None, 50, 300]), keys=st.sampled_from([1, 3, 20]),
       batches=st.sampled_from([1, 3]))
def test_batch_grace_join_equals_per_record_processing(tmp_path_factory, seed, left, steps, history, keys,
                                                       batches):
    tmp_path = tmp_path_factory.mktemp("grace")
    top = grace_topology(left, steps, history)
    expected, found = both_ways(top, random_batches(seed, batches=batches, keys=keys), tmp_path)
    assert found[3] == batches
    assert sum(map(len, expected[0])) > 0


def test_grace_join_corrections_and_expired_versions(tmp_path):
    """The batch path emits corrections with the update header and counts the drops."""
    batches = random_batches(11, batches=3, per_batch=200, keys=3)
    expected, found = both_ways(grace_topology(False, False), batches, tmp_path)
    assert found[3] == 3
    assert any(headers and headers[-1][0] == "streamlib.update" for out in expected[0]
               for *_, headers in out)
    assert expected[2]["drops"].get("expired_table_version")


def test_fixed_example_with_headers_tombstones_and_late_updates(tmp_path):
    """An update and a tombstone between orders of its key, an order before any row."""
    batch = rows([("orders", 0, 0, 5, b"a", b"o0", []), ("customers", 0, 0, 6, b"a", b"c0", []),
                  ("orders", 0, 1, 7, b"a", b"o1", [("h", b"1")]), ("customers", 1, 0, 3, b"a", None, []),
                  ("orders", 1, 0, 8, b"a", b"o2", []), ("customers", 0, 1, 9, b"b", b"c1", []),
                  ("orders", 0, 2, 9, b"b", b"o3", [])])
    for left in (False, True):
        expected, found = both_ways(topology(left, False, True), [batch], tmp_path / str(left))
        assert found[3] == 1
        values = [(key, value) for topic, _, _, key, value, _ in expected[0][0] if topic == "out"]
        assert (b"a", b"o1|c0") in values and (b"b", b"o3|c1") in values


@pytest.mark.parametrize("grace", [False, True], ids=["classic", "grace"])
@pytest.mark.parametrize("case", ["null-key", "null-value", "bad-utf8", "joiner-raises"])
def test_rows_it_cannot_take_go_record_by_record(tmp_path, case, grace):
    batches = random_batches(5, stream_nulls=case.startswith("null"))
    if case == "bad-utf8":
        batches[1] = pa.concat_tables([batches[1], rows([("orders", 0, 999, 500, b"k1", b"\xff", [])])])
    if case == "joiner-raises":
        def joiner(order, customer):
            if order == "v3":
                raise ValueError("no v3")
            return order + customer
        top = grace_topology(False, False, joiner=joiner) if grace else topology(False, False, False, joiner)
        for name, batch_path in (("records", False), ("batch", True)):
            with pytest.raises(ProcessingError, match="no v3"):
                run(top, batches, tmp_path, name, batch_path)
        return
    top = grace_topology(True, False) if grace else topology(True, False, False)
    expected, found = both_ways(top, batches, tmp_path, handler="log_and_continue")
    assert found[3] < len(batches)
    assert expected[2]["dropped_records"] > 0
