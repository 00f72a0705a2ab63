"""Windowed counts pre-aggregated by the source reader (``spark/window_counts.py``)
against the rows themselves through the batch and per-record paths: the same output
rows in the same order, the same store bytes, the same counters, for one and two
tasks, input partitions read in several chunks, tumbling and hopping windows, late,
too-late, key-less and undecodable records; and the plan's choice of topics."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from streamlib import Consumed, Materialized, Serdes, StreamsBuilder, StreamsConfig, TimeWindows
from streamlib.runtime.encoding import InputEncoding
from streamlib.spark.hashing import hash_partition
from streamlib.spark.window_counts import WindowCountInput, aggregate_range, window_count_inputs
from streamlib.topics.base import RECORD_SCHEMA
from test_windowed_batch_count import rows as stage_rows
from test_windowed_batch_count import run, topology

S = Serdes.string()


def partition_batches(seed: int, batches: int = 5, per_batch: int = 200, bad: bool = False
                      ) -> list[dict[int, list[tuple]]]:
    """Per batch, per input partition: (offset, timestamp, key, value, headers) records in
    offset order. Key-less and undecodable records are too late to raise their partition's
    running maximum (where they would, the pre-aggregated merge leaves them out)."""
    rng = random.Random(seed)
    clock, offsets, out = 0, [0, 0], []
    for _ in range(batches):
        parts: dict[int, list[tuple]] = {0: [], 1: []}
        for _ in range(per_batch):
            clock += rng.randint(0, 9)
            p = rng.randrange(2)
            ts = max(0, clock - rng.choice([0, 0, 0, 0, 30, 120, 400]))
            key = f"k{rng.randrange(9)}".encode()
            value = b"v"
            if rng.random() < 0.04:
                key, ts = None, max(0, clock - 500)
            elif bad and rng.random() < 0.03:
                key, ts = b"\xff", max(0, clock - 500)
            headers = [("h", f"{offsets[p]}".encode())] if rng.random() < 0.3 else []
            parts[p].append((offsets[p], ts, key, value, headers))
            offsets[p] += 1
        out.append(parts)
    return out


def record_table(records: list[tuple]) -> pa.Table:
    return pa.table({"offset": [r[0] for r in records], "timestamp": [r[1] for r in records],
                     "key": pa.array([r[2] for r in records], pa.binary()),
                     "value": pa.array([r[3] for r in records], pa.binary()),
                     "headers": pa.array([[{"key": k, "value": v} for k, v in r[4]] for r in records],
                                         RECORD_SCHEMA.field("headers").type)}, schema=RECORD_SCHEMA)


def task_of(key, tasks: int) -> int:
    return 42 % tasks if key is None else hash_partition(key, tasks)   # Spark's hash of null: the seed


def task_inputs(batches, tasks: int, task: int, windows, chunk: int) -> tuple[list[pa.Table], list[pa.Table]]:
    """(raw rows, pre-aggregated rows) of one task per batch."""
    spec = WindowCountInput("in", tasks, windows, S, S)
    raws, aggregated = [], []
    for parts in batches:
        mine = [(p, *r) for p, records in parts.items() for r in records if task_of(r[2], tasks) == task]
        raws.append(stage_rows(mine))
        tables = []
        for p, records in parts.items():
            chunks = (record_table(records[i:i + chunk]) for i in range(0, len(records), chunk))
            for batch in aggregate_range(chunks, "in", p, spec):
                keys = batch.column("key").to_pylist()
                keep = np.array([task_of(k, tasks) == task for k in keys], dtype=bool)
                tables.append(pa.Table.from_batches([batch]).filter(pa.array(keep)))
        aggregated.append(pa.concat_tables(tables))
    return raws, aggregated


@pytest.mark.parametrize("advance", [None, 30], ids=["tumbling", "hopping"])
@pytest.mark.parametrize("tasks", [1, 2])
@pytest.mark.parametrize("seed", [1, 2])
def test_pre_aggregated_rows_count_what_the_rows_count(tmp_path, advance, tasks, seed):
    batches = partition_batches(seed, bad=seed == 2)
    top = topology(advance, suppress=seed == 2)
    windows = top.nodes[next(n for n in top.nodes if top.nodes[n].spec.name == "window_aggregate")].params.windows
    for task in range(tasks):
        raws, aggregated = task_inputs(batches, tasks, task, windows, chunk=37)
        if advance is None:   # hopping windows: a row per window, four per record here
            assert sum(t.num_rows for t in aggregated) < sum(t.num_rows for t in raws)
        expected = run(top, raws, tmp_path, f"records-{task}", batch_path=False, handler="log_and_continue")
        found = run(top, aggregated, tmp_path, f"aggregated-{task}", batch_path=True,
                    handler="log_and_continue", encoding=InputEncoding.WINDOW_COUNTS)
        assert found[0] == expected[0]
        assert found[1] == expected[1]
        assert found[2] == expected[2]
        assert expected[2]["dropped_records"] > 0 and sum(map(len, expected[0])) > 0
        if seed == 2 and task == task_of(b"\xff", tasks):   # the undecodable records' task
            assert expected[2]["skipped_records"] > 0


def test_windows_closed_at_the_batch_start_drop_every_record(tmp_path):
    """A window that closed before the batch drops its records even where they are on
    time within their own partition."""
    windows = TimeWindows.of(100, grace=0)
    top = topology(None, False, grace=0)
    batches = [{0: [(0, 500, b"a", b"v", [])], 1: []},
               {0: [], 1: [(0, 50, b"a", b"v", []), (1, 60, b"b", b"v", []), (2, 650, b"a", b"v", [])]}]
    raws, aggregated = task_inputs(batches, 1, 0, windows, chunk=10)
    expected = run(top, raws, tmp_path, "records", batch_path=False)
    found = run(top, aggregated, tmp_path, "aggregated", batch_path=True)
    assert found[:3] == expected[:3]
    assert expected[2]["dropped_records"] == 2


def test_the_plan_pre_aggregates_only_a_topic_a_cached_windowed_count_reads_alone():
    def build(extra_reader=False, op="count", final=False):
        builder = StreamsBuilder()
        stream = builder.stream("in", consumed=Consumed.with_(S, S))
        grouped = stream.group_by_key().windowed_by(
            TimeWindows.of(100, grace=10))
        table = grouped.count(materialized=Materialized.as_("c")) if op == "count" else grouped.reduce(
            lambda a, b: a + b, materialized=Materialized.as_("c"))
        if final:
            from streamlib import EmitStrategy
            table = builder.stream("in2", consumed=Consumed.with_(S, S)).group_by_key().windowed_by(
                TimeWindows.of(100, grace=10)).emit_strategy(EmitStrategy.on_window_close()).count()
        table.to_stream().to("out")
        if extra_reader:   # the source's rows are needed as they are
            stream.to("copy")
        return builder.build()

    config = StreamsConfig(application_id="app")
    top = build()
    found = window_count_inputs(top, config, {s.id: 3 for s in top.subtopologies})
    assert list(found) == ["in"] and found["in"].tasks == 3
    for top in (build(extra_reader=True), build(op="reduce")):
        assert window_count_inputs(top, config, {s.id: 2 for s in top.subtopologies}) == {}
    top = build(final=True)
    assert list(window_count_inputs(top, config, {s.id: 2 for s in top.subtopologies})) == ["in"]
    uncached = StreamsConfig(application_id="app", cache_max_bytes=0)
    assert window_count_inputs(build(), uncached, {0: 2}) == {}
