"""A Spark task that runs several streamlib tasks (``stage_function``, as ``mapInArrow``
calls it) makes their batch's appends durable in one round of fsyncs at its end: each
file written is synced once, after every task ran, and the results are those of the
tasks run one by one."""
from __future__ import annotations

import os
import uuid

import pyarrow as pa

from streamlib import Serdes, StreamsConfig
from streamlib.preflight import prepare_changelogs
from streamlib.spark import tasks
from streamlib.spark.changelog_positions import POSITIONS_PROPERTY
from streamlib.spark.sink import QUERY_ID_PROPERTY
from streamlib.spark.tasks import BATCH_PROPERTY, STAGE_SCHEMA, TASK_PARTITION, StagePlan, stage_function
from streamlib.topics import open_backend
from streamlib.topics.spec import BackendSpec

from tests.unit.test_state_cache_tasks import count_topology


class FakeTaskContext:
    """What the stage function asks of Spark's ``TaskContext`` (no JVM here)."""

    properties = {BATCH_PROPERTY: "0:-1", QUERY_ID_PROPERTY: "q", POSITIONS_PROPERTY: None}

    @classmethod
    def get(cls):
        return cls()

    def getLocalProperty(self, name):
        return self.properties.get(name)


def rows_of(keys_by_task: dict[int, list[str]]) -> pa.RecordBatch:
    keys = [k for task in keys_by_task for k in keys_by_task[task]]
    n = len(keys)
    return pa.record_batch({
        "topic": ["words"] * n, "partition": pa.array([0] * n, pa.int32()),
        "offset": pa.array(range(n), pa.int64()), "timestamp": pa.array([1000] * n, pa.int64()),
        "key": [k.encode() for k in keys], "value": [b"x"] * n,
        "headers": pa.array([[]] * n, STAGE_SCHEMA.field("headers").type),
        TASK_PARTITION: pa.array([task for task in keys_by_task for _ in keys_by_task[task]], pa.int32())})


def test_a_spark_task_syncs_its_tasks_appends_once_at_its_end(tmp_path, monkeypatch):
    url = f"local://{tmp_path / 'log'}"
    backend = open_backend(url)
    for topic in ("words", "counts-out"):
        backend.create_topic(topic, partitions=2)
    config = StreamsConfig(application_id="app", bootstrap=url, state_dir=str(tmp_path / "state"), cache_max_bytes=0)
    topology = count_topology()
    prepare_changelogs(topology, config, backend, {0: 2})
    plan = StagePlan(topology, config, BackendSpec(url), 0, 2, frozenset(), uuid.uuid4().hex)
    monkeypatch.setattr(tasks, "TaskContext", FakeTaskContext)
    finished = []
    real_run_task = tasks.run_task

    def counted_run_task(*args, **kwargs):
        result = real_run_task(*args, **kwargs)
        finished.append(args[2])
        return result

    monkeypatch.setattr(tasks, "run_task", counted_run_task)
    synced = []   # (file, tasks finished when it was synced)
    real_fsync = os.fsync

    def counting_fsync(fd):
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), len(finished)))
        real_fsync(fd)

    reports = []
    run = stage_function(plan, reports.append)
    keys = {0: ["a", "b", "a", "c"], 1: ["d", "a2", "e", "d"]}
    list(run(iter([rows_of(keys)])))   # batch 0 makes the segment files (synced as made)
    finished.clear()
    reports.clear()
    monkeypatch.setitem(FakeTaskContext.properties, BATCH_PROPERTY, "1:-1")
    monkeypatch.setattr(os, "fsync", counting_fsync)
    list(run(iter([rows_of(keys)])))
    assert finished == [0, 1]
    files = [path for path, _ in synced]
    assert files and len(files) == len(set(files))          # each file once
    assert {when for _, when in synced} == {2}                # after both tasks ran
    assert {task for report in reports for task in report["tasks"]} == {"0_0", "0_1"}
    latest = {}
    for p in range(2):
        for r in backend.read("counts-out", p, 0, backend.end_offsets("counts-out")[p]):
            latest[r.key.decode()] = Serdes.long().deserialize(r.value)
    assert latest == {"a": 4, "b": 2, "c": 2, "d": 4, "a2": 2, "e": 2}
