"""The batch path of cached windowed counts (``TimeWindowAggregateProcessor.process_batch``)
against per-record processing of the same rows: the same output rows in the same order,
the same store bytes, the same counters, over several batches with late, too-late and
key-less records, tumbling and hopping windows, with and without suppress; and the
fallbacks (undecodable bytes, invalid timestamps, timers due inside the batch)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from streamlib.processors.base import ProcessingError

from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder, Suppressed, TimeWindows
from batch_helpers import assert_batch_path_is_per_record_processing, random_batches, rows, run

S = Serdes.string()


def topology(advance: int | None, suppress: bool, grace: int = 50, key_serde=S, value_serde=S):
    builder = StreamsBuilder()
    windows = TimeWindows.of(100, grace=grace)
    if advance:
        windows = windows.advance_by(advance)
    counts = (builder.stream("in", consumed=Consumed.with_(key_serde, value_serde)).group_by_key()
              .windowed_by(windows).count(materialized=Materialized.as_("counts")))
    if suppress:
        counts = counts.suppress(Suppressed.until_window_closes())
    counts.to_stream().to("out", produced=Produced.with_(Serdes.time_windowed(key_serde, 100),
                                                         Serdes.long()))
    return builder.build()


@pytest.mark.parametrize("advance", [None, 30, 100], ids=["tumbling", "hopping", "advance=size"])
@pytest.mark.parametrize("suppress", [False, True], ids=["updates", "suppressed"])
@pytest.mark.parametrize("seed", [1, 2])
def test_batch_count_equals_per_record_processing(tmp_path, advance, suppress, seed):
    assert_batch_path_is_per_record_processing(topology(advance, suppress), random_batches(seed), tmp_path)


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


def json_values(table: pa.Table, odd: dict[int, bytes] = {}) -> pa.Table:
    """``table`` with its values as JSON the way ``Serdes.json()`` writes it (row ``i``:
    ``odd[i]`` instead)."""
    values = [None if v is None else odd.get(i, b'{"bid":%d}' % i)
              for i, v in enumerate(table.column("value").to_pylist())]
    return table.set_column(table.schema.get_field_index("value"), "value", pa.array(values, pa.binary()))


@pytest.mark.parametrize("advance", [None, 30], ids=["tumbling", "hopping"])
@pytest.mark.parametrize("seed", [1, 2])
def test_json_values_take_the_batch_path_with_the_same_results(tmp_path, advance, seed):
    """JSON values (Nexmark's q5): every batch is counted whole and gives what per-record
    processing gives."""
    top = topology(advance, True, value_serde=Serdes.json())
    assert_batch_path_is_per_record_processing(top, [json_values(t) for t in random_batches(seed)], tmp_path)


@pytest.mark.parametrize("odd", [b'{"bid": 1}', b"null", b"not json"], ids=["spaces", "null", "not-json"])
def test_json_values_that_do_not_round_trip_go_record_by_record(tmp_path, odd):
    """A value json() would not write back byte for byte (or that deserializes to null)
    sends its batch record by record, with the same results."""
    good, other = random_batches(4, batches=2)
    first = next(i for i, v in enumerate(other.column("value").to_pylist()) if v is not None)
    batches = [json_values(good), json_values(other, {first: odd})]
    top = topology(None, True, value_serde=Serdes.json())
    expected = run(top, batches, tmp_path, "records", False, "log_and_continue")
    found = run(top, batches, tmp_path, "batch", True, "log_and_continue")
    assert found[:3] == expected[:3] and found[3] == 1
