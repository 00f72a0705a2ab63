"""The batch path of a cached ``count()`` (``StreamCountProcessor.process_batch``, with
its columnar emit and store reads) against per-record processing of the same rows:
the same output rows in the same order, the same store bytes, the same counters, over
several batches with key-less and value-less records and headers; downstream both as
a chain run over columns at the flush and record by record."""
from __future__ import annotations

import pytest

from batch_helpers import assert_batch_path_is_per_record_processing, random_batches, rows, run
from streamlib import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder, StreamsConfig
from streamlib.processors.stores.keyvalue import TimestampedKeyValueStore
from streamlib.runtime.task import Task
from streamlib.state import StoreSpec, encode_timestamped, open_task_stores
from streamlib.state.timestamped import decode_timestamped_column

S, L = Serdes.string(), Serdes.long()


def topology(columnar_tail: bool):
    builder = StreamsBuilder()
    counts = (builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key()
              .count(materialized=Materialized.as_("counts")))
    updates = counts.to_stream()
    if not columnar_tail:   # peek is never run over columns: the flush forwards Records
        updates = updates.peek(lambda key, value: None)
    updates.to("out", produced=Produced.with_(S, L))
    return builder.build()


@pytest.mark.parametrize("columnar_tail", [True, False], ids=["columns", "records"])
@pytest.mark.parametrize("seed", [1, 2])
def test_batch_count_equals_per_record_processing(tmp_path, columnar_tail, seed):
    found = assert_batch_path_is_per_record_processing(topology(columnar_tail), random_batches(seed), tmp_path)
    assert any(headers for out in found[0] for *_, headers in out)


def regrouped():
    """A count whose changes go on re-grouped: its old values reach the output."""
    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key()
     .count(materialized=Materialized.as_("counts"))
     .group_by(lambda key, count: (key[:1], count), Grouped.with_(S, L)).count())
    return builder.build()


def run_commits(top, commits: list[list], tmp_path, name: str, batch_path: bool) -> list:
    """Each commit's tables through one task; the output of each commit."""
    task = Task(top, top.subtopologies[0], 0, StreamsConfig(application_id="app", state_dir=str(tmp_path / name)))
    stores = open_task_stores(tmp_path / name / "stores", task.store_specs())
    outputs = []
    try:
        for batch_id, tables in enumerate(commits):
            task.begin(stores, batch_id)
            if not batch_path:
                task._batch_child = None
            for table in tables:
                task.process_table(table)
            task.commit()
            outputs.append(task.take_output())
    finally:
        stores.close()
    return outputs


def test_two_tables_in_one_commit_keep_the_old_value_from_before_it(tmp_path):
    """A key counted by two tables of one commit is emitted once, with its count from
    before the commit as the old value and the headers of its last record."""
    commits = [[rows([(0, 0, 10, b"a1", b"v", [])])],
               [rows([(0, 1, 20, b"a1", b"v", []), (0, 2, 5, b"b1", b"v", [])]),
                rows([(0, 3, 15, b"a1", b"v", [("h", b"1")]), (0, 4, 16, b"a2", b"v", [])])]]
    top = regrouped()
    expected = run_commits(top, commits, tmp_path, "records", batch_path=False)
    found = run_commits(top, commits, tmp_path, "batch", batch_path=True)
    assert found == expected
    # the second commit: b1 (new), a1 (1 -> 3, one change with old 1), a2 (new)
    assert [(key, headers) for _, _, _, key, _, headers in found[1]] == \
        [(b"b", ()), (b"a", (("h", b"1"),)), (b"a", ())]


def test_many_reads_decode_like_one_read(tmp_path):
    """``get_many_by_bytes`` decodes a column of stored values at once; a value its serde
    rejects raises exactly what a single read raises."""
    stores = open_task_stores(tmp_path, [StoreSpec("counts", logging=False)])
    try:
        stores.begin(0)
        stores["counts"].put_many([(b"a", encode_timestamped(L.serialize(7), 3)),
                                   (b"b", encode_timestamped(b"", -1)),
                                   (b"bad", encode_timestamped(b"\x01", 9))])
        stores.commit()
        stores.begin(1)
        raw = TimestampedKeyValueStore("counts", stores["counts"], S, Serdes.bytes())
        assert raw.get_many_by_bytes([b"a", b"none", b"b"]) == [(L.serialize(7), 3), None, (b"", -1)]
        longs = TimestampedKeyValueStore("counts", stores["counts"], S, L)
        assert longs.get_many_by_bytes([b"a", b"none"]) == [(7, 3), None]
        with pytest.raises(ValueError, match="long needs exactly 8 bytes, got 1") as many:
            TimestampedKeyValueStore("counts", stores["counts"], S, L).get_many_by_bytes([b"a", b"bad"])
        with pytest.raises(ValueError) as one:
            TimestampedKeyValueStore("counts", stores["counts"], S, L).get_by_bytes(b"bad")
        assert str(many.value) == str(one.value)
    finally:
        stores.close()


def test_timestamped_values_decode_as_a_column():
    values, stamps = decode_timestamped_column(
        [encode_timestamped(b"xy", 5), None, encode_timestamped(b"", -2), b"12345678" + b"z" * 20])
    assert values.to_pylist() == [b"xy", None, b"", b"z" * 20]
    assert stamps.tolist() == [5, 0, -2, int.from_bytes(b"12345678", "big", signed=True)]
    assert decode_timestamped_column([None])[0].to_pylist() == [None]
    with pytest.raises(ValueError, match="at least 8 bytes, got 3"):
        decode_timestamped_column([encode_timestamped(b"", 1), b"abc"])
