"""Helpers of the tests that run cached counts' batch path against per-record
processing (``process_batch`` of windowed and plain counts): input tables, random
batches, and one task run over them either way."""
from __future__ import annotations

import random
from typing import Callable

import pyarrow as pa

from streamlib import StreamsConfig
from streamlib.runtime.encoding import InputEncoding
from streamlib.runtime.task import Task
from streamlib.state import open_task_stores

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def rows(records: list[tuple]) -> pa.Table:
    """(partition, offset, timestamp, key, value, headers) -> a task's input table."""
    return pa.table({
        "topic": pa.array(["in"] * len(records), pa.string()),
        "partition": pa.array([r[0] for r in records], pa.int32()),
        "offset": pa.array([r[1] for r in records], pa.int64()),
        "timestamp": pa.array([r[2] for r in records], pa.int64()),
        "key": pa.array([r[3] for r in records], pa.binary()),
        "value": pa.array([r[4] for r in records], pa.binary()),
        "headers": pa.array([[{"key": k, "value": v} for k, v in r[5]] for r in records], HEADER_TYPE),
    })


def random_batches(seed: int, batches: int = 6, per_batch: int = 150) -> list[pa.Table]:
    rng = random.Random(seed)
    clock, offset, out = 0, 0, []
    for _ in range(batches):
        records = []
        for _ in range(per_batch):
            clock += rng.randint(0, 9)
            ts = max(0, clock - rng.choice([0, 0, 0, 0, 30, 120, 400]))   # late, too late
            key = None if rng.random() < 0.03 else f"k{rng.randrange(7)}".encode()
            value = None if rng.random() < 0.05 else b"v"
            headers = [("h", f"{offset}".encode())] if rng.random() < 0.3 else []
            records.append((rng.randrange(2), offset, ts, key, value, headers))
            offset += 1
        out.append(rows(records))
    return out


def counted_whole(task: Task, table: pa.Table) -> Callable[[], int]:
    """Whether the cached count's batch path takes ``table`` whole (asked before the
    batch, on a copy of its rows)."""
    whole = task._takes_table(table.take(list(range(table.num_rows))), task._batch_child[1])
    return lambda: whole


def run(top, batches, tmp_path, name, batch_path, handler="fail", punctuate=None,
        encoding=InputEncoding.RECORDS, cache_max_bytes=None, path="_batch_child", whole=counted_whole):
    """Every batch through one Task (its rows encoded as ``encoding`` says); ``batch_path``
    False: per record (the task's batch path, its attribute ``path``, off). Returns the
    outputs per batch, the stores' bytes, the counters, and the batches taken whole:
    ``whole(task, table)``, called before each batch where the task has a batch path,
    returns what tells it after the batch."""
    options = {} if cache_max_bytes is None else {"cache_max_bytes": cache_max_bytes}
    config = StreamsConfig(application_id="app", state_dir=str(tmp_path / name),
                           deserialization_exception_handler=handler, **options)
    task = Task(top, top.subtopologies[0], 0, config)
    stores = open_task_stores(tmp_path / name / "stores", task.store_specs())
    outputs, taken = [], 0
    try:
        for batch_id, table in enumerate(batches):
            task.begin(stores, batch_id)
            if punctuate:
                task.context.timers.schedule(punctuate, "stream_time", lambda now: None, 0)
            answer = None
            if not batch_path:
                setattr(task, path, None)
            elif getattr(task, path) is not None:
                answer = whole(task, table)
            task.process_table(table, encoding)
            task.commit()
            taken += answer() if answer else 0
            outputs.append(task.take_output())
        stores.begin(len(batches))
        contents = {name: list(stores[name].all()) for name in stores}
    finally:
        stores.close()
    return outputs, contents, dict(task.metrics), taken


def assert_batch_path_is_per_record_processing(top, batches: list[pa.Table], tmp_path) -> tuple:
    """Run ``batches`` both ways: every batch takes the batch path, and the outputs, the
    store bytes and the counters are those of per-record processing (which dropped some
    records and emitted some). Returns the batch path's :func:`run`."""
    expected = run(top, batches, tmp_path, "records", batch_path=False)
    found = run(top, batches, tmp_path, "batch", batch_path=True)
    assert found[3] == len(batches)
    assert found[0] == expected[0]
    assert found[1] == expected[1]
    assert found[2] == expected[2]
    assert expected[2]["dropped_records"] > 0 and sum(map(len, expected[0])) > 0
    return found
