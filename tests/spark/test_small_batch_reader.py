"""A small batch runs a stateful first stage in its one read task
(spark/rules/small_batch_reader.py), a bigger one the plain plan: each key counted by
one task's store either way, the read task refusing the stage when it holds only part
of its batch. (That the rule never changes a result: tests/spark/test_rules_parity.py.)"""
from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest

from engine import Workspace, latest_per_key
from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder, StreamsConfig
from streamlib.spark import tasks
from streamlib.spark.rules.small_batch_reader import IN_READER_RECORDS
from streamlib.topics.spec import BackendSpec

S, L = Serdes.string(), Serdes.long()


@pytest.fixture
def ws(tmp_path):
    return Workspace(tmp_path)


def direct_count():
    """The latency probe's topology."""
    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key()
     .count(materialized=Materialized.as_("c")).to_stream().to("out", produced=Produced.with_(S, L)))
    return builder.build()


def test_a_small_batch_counts_in_its_read_task_and_a_big_one_after_the_shuffle(spark, ws):
    big = [(f"k{i % 300}", "v", i) for i in range(IN_READER_RECORDS + 500)]
    ws.produce("in", big, partitions=4)
    app = ws.run(spark, direct_count())
    assert app._plan.passes_in_reader == 0
    assert "Exchange" in app.explain().split("== Physical Plan ==")[1]
    app.stop()
    small = [(f"k{i % 7}", "v", 10_000 + i) for i in range(50)]
    ws.produce("in", small, partitions=4)
    app = ws.run(spark, direct_count())
    try:
        assert app._plan.passes_in_reader == 1
        assert "Exchange" not in app.explain().split("== Physical Plan ==")[1], "no shuffle"
        expected = Counter(k for k, _, _ in big + small)
        stored = list(app.store("c").all())
        assert len(stored) == len({k for k, _ in stored}), "each key lives in exactly one task's store"
        assert dict(stored) == expected
        assert latest_per_key(ws.read("out", value_serde=L)) == expected
        # the read task ran the tasks its keys hash to (as the shuffle sends them), each reporting
        keys = pa.chunked_array([pa.array([k.encode() for k, _, _ in small], pa.binary())])
        hashed = {f"0_{p}" for p in tasks.key_partitions(keys, 4).tolist()}
        last = app.metrics()["tasks"]
        assert len(hashed) > 1 and hashed <= {t for t, m in last.items() if m.get("records_in")}
    finally:
        app.stop()


class _Job:
    """A Spark task's view of its job's local properties."""

    def __init__(self, properties: dict):
        self.properties = properties

    def getLocalProperty(self, name):
        return self.properties.get(name)


def test_a_read_task_runs_the_stage_only_when_told_and_holding_the_whole_batch(ws, monkeypatch):
    ws.produce("in", [("a", "1")])
    plan = tasks.StagePlan(direct_count(), StreamsConfig(application_id="a"), BackendSpec(ws.bootstrap), 0, 2,
                           frozenset())
    read = tasks.small_batch_reader_function(plan, lambda metrics: None, time_aware=False)
    batch = pa.RecordBatch.from_pydict({"topic": ["in"], "key": [b"a"]})
    job = _Job({tasks.READER_RUNS_PROPERTY: ""})
    monkeypatch.setattr(tasks, "TaskContext", type("TaskContext", (), {"get": staticmethod(lambda: job)}))
    assert list(read(iter([batch]), 0, 2)) == [batch], "a batch the plain plan runs: rows as read"
    job.properties[tasks.READER_RUNS_PROPERTY] = "0"
    with pytest.raises(RuntimeError, match="read the batch in 2 tasks"):
        list(read(iter([batch]), 1, 2))
