"""The batch path of cached windowed reduces and aggregates
(``TimeWindowAggregateProcessor.process_folds``, rows encoded as
``InputEncoding.WINDOW_FOLDS``) against per-record processing of the same rows: the same
output rows in the same order, the same store bytes, the same counters, over several
batches of two partitions, out of order, with late, too-late and key-less records and
null values; tumbling and hopping windows, grace or none, with and without suppress;
and the fallbacks (a user function that raises, undecodable bytes, a timer due inside
the batch)."""
from __future__ import annotations

import os
import random

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batch_helpers import rows, run
from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder, Suppressed, TimeWindows
from streamlib.processors.base import ProcessingError
from streamlib.runtime.encoding import InputEncoding

S = Serdes.string()
FOLDS = InputEncoding.WINDOW_FOLDS


def concat(agg: str, value) -> str:
    """Order-sensitive and bounded: a wrong order or a lost value shows."""
    return f"{agg}{value if value is not None else '-'}"[-12:]


def topology(op: str, advance=None, suppress=False, grace=50, value_serde=S, reducer=concat):
    builder = StreamsBuilder()
    windows = TimeWindows.of(100, grace=grace)
    if advance:
        windows = windows.advance_by(advance)
    grouped = builder.stream("in", consumed=Consumed.with_(S, value_serde)).group_by_key().windowed_by(windows)
    if op == "reduce":
        table = grouped.reduce(reducer, materialized=Materialized.as_("folds"))
    else:
        table = grouped.aggregate(lambda: "<", lambda key, value, agg: reducer(agg + key[-1:], value),
                                  materialized=Materialized.as_("folds").with_value_serde(S))
    if suppress:
        table = table.suppress(Suppressed.until_window_closes())
    table.to_stream().map_values(str).to("out", produced=Produced.with_(Serdes.time_windowed(S, 100), S))
    return builder.build()


def random_batches(seed: int, batches: int = 5, per_batch: int = 120, keys: int = 5) -> list[pa.Table]:
    """Two partitions, each in offset order with its own clock, late and too-late
    records, keys that are missing, values that are null, some headers."""
    rng = random.Random(seed)
    clocks, offsets, out = [0, 0], [0, 0], []
    for _ in range(batches):
        records = []
        for _ in range(per_batch):
            p = rng.randrange(2)
            clocks[p] += rng.randint(0, 12)
            ts = max(0, clocks[p] - rng.choice([0, 0, 0, 0, 30, 120, 400]))
            key = None if rng.random() < 0.03 else f"k{rng.randrange(keys)}".encode()
            value = None if rng.random() < 0.05 else f"{offsets[p] % 10}".encode()
            headers = [("h", f"{offsets[p]}".encode())] if rng.random() < 0.3 else []
            records.append((p, offsets[p], ts, key, value, headers))
            offsets[p] += 1
        out.append(rows(records))
    return out


def folded_whole(task, table):
    """Counts a batch the fold path took whole (``process_folds`` answered True)."""
    child = task._fold_child[2]
    folds = child.process_folds
    answers = []

    def counting(*args):
        answers.append(folds(*args))
        return answers[-1]
    child.process_folds = counting
    return lambda: int(any(answers))


def both_ways(top, batches, tmp_path, **options):
    expected = run(top, batches, tmp_path, "records", batch_path=False, path="_fold_child", **options)
    found = run(top, batches, tmp_path, "folds", batch_path=True, encoding=FOLDS, path="_fold_child",
                whole=folded_whole, **options)
    return expected, found


def assert_same(expected, found, batches) -> None:
    assert found[3] == len(batches)
    assert found[0] == expected[0]
    assert found[1] == expected[1]
    assert found[2] == expected[2]


@pytest.mark.parametrize("op", ["reduce", "aggregate"])
@pytest.mark.parametrize("advance", [None, 30], ids=["tumbling", "hopping"])
@pytest.mark.parametrize("suppress", [False, True], ids=["updates", "suppressed"])
def test_folds_equal_per_record_processing(tmp_path, op, advance, suppress):
    batches = random_batches(7)
    expected, found = both_ways(topology(op, advance, suppress), batches, tmp_path)
    assert_same(expected, found, batches)
    assert expected[2]["drops"]["late"] and expected[2]["drops"]["null_key"] and sum(map(len, expected[0]))


@settings(max_examples=int(os.environ.get("FOLD_EXAMPLES", "25")), deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10_000), op=st.sampled_from(["reduce", "aggregate"]),
       advance=st.sampled_from([None, 30, 100]), grace=st.sampled_from([0, 50, 300]),
       suppress=st.booleans(), keys=st.sampled_from([1, 3, 20]), batches=st.integers(1, 4))
def test_folds_equal_per_record_processing_on_random_input(tmp_path_factory, seed, op, advance, grace,
                                                            suppress, keys, batches):
    tables = random_batches(seed, batches=batches, per_batch=60, keys=keys)
    expected, found = both_ways(topology(op, advance, suppress, grace), tables, tmp_path_factory.mktemp("f"))
    assert_same(expected, found, tables)


def test_one_key_as_nexmark_q7(tmp_path):
    """Every record to one key (q7's highest bid): JSON values, the window's highest."""
    J = Serdes.json()
    batches = [t.set_column(t.schema.get_field_index("key"), "key", pa.array([b"all"] * t.num_rows, pa.binary()))
               for t in random_batches(11)]
    batches = [t.set_column(t.schema.get_field_index("value"), "value",
                            pa.array([None if v is None else b'{"price":%d}' % (7 * i % 50)
                                      for i, v in enumerate(t.column("value").to_pylist())], pa.binary()))
               for t in batches]
    top = topology("reduce", suppress=True, value_serde=J,
                   reducer=lambda a, b: a if b is None or a["price"] >= b["price"] else b)
    expected, found = both_ways(top, batches, tmp_path)
    assert_same(expected, found, batches)


@pytest.mark.parametrize("case", ["raises", "bad-utf8-value", "timer"])
def test_fallbacks_to_per_record_processing(tmp_path, case):
    """A batch the fold path cannot take exactly goes record by record: a user function
    that raises fails the task naming the same record, the handler sees the undecodable
    record, a timer fires between records."""
    good = random_batches(3, batches=2)
    bad = rows([(0, 1000, 5_000, b"k1", b"1", []), (1, 1000, 5_007, b"k2", b"x", []),
                (0, 1001, 5_009, b"k2", b"x", [])])
    if case == "bad-utf8-value":
        bad = rows([(0, 1000, 5_000, b"k1", b"1", []), (1, 1000, 5_007, b"k2", b"\xed\xa0\x80", [])])
    batches = [good[0], bad, good[1]]
    if case == "raises":
        def picky(agg, value):
            if value == "x" and agg == "x":
                raise ValueError("two x")
            return concat(agg, value)
        top = topology("reduce", reducer=picky)
        for name, batch_path in (("records", False), ("folds", True)):
            with pytest.raises(ProcessingError, match=r"ValueError: two x.* at topic 'in' partition 0 offset 1001"):
                run(top, batches, tmp_path, name, batch_path, encoding=FOLDS, path="_fold_child", whole=folded_whole)
        return
    top = topology("aggregate", advance=30, suppress=True)
    options = {"handler": "log_and_continue", "punctuate": 50 if case == "timer" else None}
    expected, found = both_ways(top, batches, tmp_path, **options)
    assert found[:3] == expected[:3]
    assert found[3] == (0 if case == "timer" else 2)
    if case.startswith("bad"):
        assert expected[2]["skipped_records"] == 1
