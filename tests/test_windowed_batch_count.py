"""The batch path of cached windowed counts (``TimeWindowAggregateProcessor.process_batch``)
against per-record processing of the same rows: the same output rows in the same order,
the same store bytes, the same counters, over several batches with late, too-late and
key-less records, tumbling and hopping windows, with and without suppress; and the
fallbacks (undecodable bytes, invalid timestamps, timers due inside the batch)."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest

from streamlib.processors.base import ProcessingError

from streamlib import (Consumed, Materialized, Produced, Serdes, StreamsBuilder, StreamsConfig,
                       Suppressed, TimeWindows)
from streamlib.runtime.task import Task
from streamlib.state import open_task_stores

S = Serdes.string()
HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def topology(advance: int | None, suppress: bool, grace: int = 50, key_serde=S):
    builder = StreamsBuilder()
    windows = TimeWindows.of(100, grace=grace)
    if advance:
        windows = windows.advance_by(advance)
    counts = (builder.stream("in", consumed=Consumed.with_(key_serde, S)).group_by_key()
              .windowed_by(windows).count(materialized=Materialized.as_("counts")))
    if suppress:
        counts = counts.suppress(Suppressed.until_window_closes())
    counts.to_stream().to("out", produced=Produced.with_(Serdes.time_windowed(key_serde, 100),
                                                         Serdes.long()))
    return builder.build()


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


def run(top, batches, tmp_path, name, batch_path, handler="fail", punctuate=None):
    """Every batch through one Task; ``batch_path`` False: per record. Returns the
    outputs per batch, the stores' bytes, the counters, and the batches counted whole."""
    config = StreamsConfig(application_id="app", state_dir=str(tmp_path / name),
                           deserialization_exception_handler=handler)
    task = Task(top, top.subtopologies[0], 0, config)
    stores = open_task_stores(tmp_path / name / "stores", task.store_specs())
    outputs, whole = [], 0
    try:
        for batch_id, table in enumerate(batches):
            task.begin(stores, batch_id)
            if punctuate:
                task.context.timers.schedule(punctuate, "stream_time", lambda now: None, 0)
            if not batch_path:
                task._batch_child = None
            elif task._batch_child is not None:
                whole += task._takes_table(table.take(list(range(table.num_rows))))
            task.process_table(table)
            task.commit()
            outputs.append(task.take_output())
        stores.begin(len(batches))
        contents = {name: list(stores[name].all()) for name in stores}
    finally:
        stores.close()
    return outputs, contents, dict(task.metrics), whole


@pytest.mark.parametrize("advance", [None, 30, 100], ids=["tumbling", "hopping", "advance=size"])
@pytest.mark.parametrize("suppress", [False, True], ids=["updates", "suppressed"])
@pytest.mark.parametrize("seed", [1, 2])
def test_batch_count_equals_per_record_processing(tmp_path, advance, suppress, seed):
    batches = random_batches(seed)
    top = topology(advance, suppress)
    expected = run(top, batches, tmp_path, "records", batch_path=False)
    found = run(top, batches, tmp_path, "batch", batch_path=True)
    assert found[3] == len(batches)                  # every batch took the batch path
    assert found[0] == expected[0]
    assert found[1] == expected[1]
    assert found[2] == expected[2]
    assert expected[2]["dropped_records"] > 0 and sum(map(len, expected[0])) > 0


def test_windows_already_in_the_store_and_a_zero_grace(tmp_path):
    """Counts continue from the store across batches; with no grace a record exactly at
    a window's end closes it, and an equal timestamp is not late."""
    batches = [rows([(0, 0, 100, b"a", b"v", []), (0, 1, 150, b"a", b"v", [])]),
               rows([(0, 2, 199, b"a", b"v", []), (0, 3, 200, b"a", b"v", []),
                     (0, 4, 199, b"a", b"v", []), (0, 5, 200, b"b", b"v", [])])]
    top = topology(None, False, grace=0)
    expected = run(top, batches, tmp_path, "records", batch_path=False)
    found = run(top, batches, tmp_path, "batch", batch_path=True)
    assert found[3] == 2 and found[:3] == expected[:3]
    assert expected[2]["dropped_records"] == 1


@pytest.mark.parametrize("case", ["bad-utf8-key", "bad-utf8-value", "negative-timestamp", "timer"])
def test_fallbacks_to_per_record_processing(tmp_path, case):
    """Rows the batch path cannot take exactly go record by record: the handler sees
    the undecodable record, the invalid timestamp stops the task, the timer fires
    between records."""
    good = random_batches(3, batches=2)
    bad = [(0, 1000, 5, b"k1", b"v", []), (0, 1001, 7, b"k2", b"v", [])]
    if case == "bad-utf8-key":
        bad[0] = (0, 1000, 5, b"\xff", b"v", [])
    elif case == "bad-utf8-value":
        bad[1] = (0, 1001, 7, b"k2", b"\xed\xa0\x80", [])
    elif case == "negative-timestamp":
        bad[0] = (0, 1000, -5, b"k1", b"v", [])
    batches = [good[0], rows(bad), good[1]]
    top = topology(30, True)
    punctuate = 50 if case == "timer" else None
    if case == "negative-timestamp":   # stops the task whatever the handler, on both paths
        for name, batch_path in (("records", False), ("batch", True)):
            with pytest.raises(ProcessingError, match="invalid .negative or missing. timestamp -5"):
                run(top, batches, tmp_path, name, batch_path, "log_and_continue", punctuate)
        return
    expected = run(top, batches, tmp_path, "records", False, "log_and_continue", punctuate)
    found = run(top, batches, tmp_path, "batch", True, "log_and_continue", punctuate)
    assert found[:3] == expected[:3]
    assert found[3] == (0 if case == "timer" else 2)
    if case.startswith("bad"):
        assert expected[2]["skipped_records"] == 1


def test_keys_of_other_serdes(tmp_path):
    """Long keys: a batch whose keys all have 8 bytes is counted whole; one with a
    short key goes record by record and the handler skips it."""
    L = Serdes.long()
    top = topology(None, False, key_serde=L)
    ok = rows([(0, i, 10 * i, L.serialize(i % 3), b"v", []) for i in range(20)])
    short = rows([(0, 20, 200, b"\x01", b"v", []), (0, 21, 210, L.serialize(1), b"v", [])])
    expected = run(top, [ok, short], tmp_path, "records", False, "log_and_continue")
    found = run(top, [ok, short], tmp_path, "batch", True, "log_and_continue")
    assert found[:3] == expected[:3] and found[3] == 1
