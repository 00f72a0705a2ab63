"""Stream–table join with a grace period (the late-update re-trigger, DESIGN.md "Joins")
under the TopologyTestDriver, and a property test against a plain-Python oracle."""
from __future__ import annotations

import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from streamlib import Materialized, StreamsBuilder, TopologyTestDriver
from streamlib.processors import drops
from streamlib.topology import TopologyError
from streamlib.processors.stores import STORE_KINDS
from streamlib.processors.stores.stream_buffer import StreamBuffer
from streamlib.processors.stores.versioned import VersionedKeyValueStore
from streamlib.serdes import Serdes
from streamlib.state import StoreSpec, open_task_stores

from grace_join_helpers import S, UPDATE, final_results, grace_join, oracle
from streams_helpers import config


class Run:
    """A driver over :func:`grace_join` with the table, stream and output topics."""

    def __init__(self, grace_ms: int = 10, left: bool = False, history_ms=None):
        self.driver = TopologyTestDriver(grace_join(grace_ms, left, history_ms=history_ms), config())
        self.table = self.driver.create_input_topic("table", S, S)
        self.stream = self.driver.create_input_topic("stream", S, S)
        self.out = self.driver.create_output_topic("out", S, S)

    def read(self) -> list[tuple]:
        """(key, value, timestamp, headers) of the records written since the last read."""
        return [(r.key, r.value, r.timestamp, r.headers) for r in self.out.read_records_to_list()]

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc) -> None:
        self.driver.close()


def test_dual_streaming_model_example():
    """DESIGN.md: ⟨A,a,2⟩, stream ⟨A,α′,6⟩ yields ⟨A,α′⋈a,6⟩; the late ⟨A,a′,5⟩ yields
    the correction ⟨A,α′⋈a′,6⟩ with the header streamlib.update."""
    with Run() as run:
        run.table.pipe_input("A", "a", 2)
        assert run.read() == []
        run.stream.pipe_input("A", "α′", 6)
        assert run.read() == [("A", "α′⋈a", 6, {})]
        run.table.pipe_input("A", "a′", 5)
        assert run.read() == [("A", "α′⋈a′", 6, {UPDATE: b"1"})]


def test_in_order_table_updates_emit_nothing():
    """An update newer than every buffered record of its key corrects nothing (and table
    updates never trigger on their own); later records meet it."""
    with Run() as run:
        run.table.pipe_input("A", "a", 2)
        run.stream.pipe_input("A", "x", 4)
        run.table.pipe_input("A", "b", 5)
        run.table.pipe_input("B", "z", 1)
        run.stream.pipe_input("A", "y", 6)
        run.stream.pipe_input("A", "w", 3)       # out of order itself: meets the version valid at 3
        assert run.read() == [("A", "x⋈a", 4, {}), ("A", "y⋈b", 6, {}), ("A", "w⋈a", 3, {})]


def test_a_late_update_corrects_exactly_the_records_up_to_the_next_version():
    """Versions a@2 and c@10; the late b@5 re-joins the records at 6 and 9 only: not 4
    (before it), not 10 and 12 (the next version's), and not other keys."""
    with Run(grace_ms=100) as run:
        run.table.pipe_input("A", "a", 2)
        run.table.pipe_input("A", "c", 10)
        run.table.pipe_input("B", "q", 0)
        for ts in (4, 6, 9, 10, 12):
            run.stream.pipe_input("A", f"s{ts}", ts)
        run.stream.pipe_input("B", "t7", 7)
        run.read()
        run.table.pipe_input("A", "b", 5)
        assert run.read() == [("A", "s6⋈b", 6, {UPDATE: b"1"}), ("A", "s9⋈b", 9, {UPDATE: b"1"})]


def test_records_with_equal_timestamps_are_corrected_in_arrival_order_with_their_headers():
    with Run() as run:
        run.table.pipe_input("A", "a", 1)
        run.stream.pipe_input("A", "first", 6, headers={"trace": b"t1"})
        run.stream.pipe_input("A", "second", 6)
        run.read()
        run.table.pipe_input("A", "b", 6)       # same timestamp as the records: valid for them
        assert run.read() == [("A", "first⋈b", 6, {"trace": b"t1", UPDATE: b"1"}),
                              ("A", "second⋈b", 6, {UPDATE: b"1"})]


def test_left_join_correction():
    """A left join's (v, None) is corrected when a version arrives late."""
    with Run(left=True) as run:
        run.stream.pipe_input("A", "α", 6)
        assert run.read() == [("A", "α⋈None", 6, {})]
        run.table.pipe_input("A", "a", 5)
        assert run.read() == [("A", "α⋈a", 6, {UPDATE: b"1"})]
        run.table.pipe_input("A", "a0", 3)       # older still: the record keeps a@5
        assert run.read() == []


def test_inner_join_first_result_from_a_late_version_has_no_header():
    """An inner join's record without a match emitted nothing; a late version gives its
    first result, which carries no header."""
    with Run() as run:
        run.stream.pipe_input("A", "α", 6)
        assert run.read() == []
        run.table.pipe_input("A", "a", 5)
        assert run.read() == [("A", "α⋈a", 6, {})]


def test_tombstone_versions():
    """A tombstone is a version: records after it have no match; a late tombstone
    retracts an inner join's result (None value with the header) and turns a left
    join's into (v, None); a late version after it restores a match."""
    with Run() as run:
        run.table.pipe_input("A", "a", 2)
        run.table.pipe_input("A", None, 8)
        run.stream.pipe_input("A", "x", 9)
        run.stream.pipe_input("A", "y", 7)
        run.stream.pipe_input("A", "z", 6)
        assert run.read() == [("A", "y⋈a", 7, {}), ("A", "z⋈a", 6, {})]
        run.table.pipe_input("A", None, 7)
        assert run.read() == [("A", None, 7, {UPDATE: b"1"})]
        run.table.pipe_input("A", "b", 9)
        assert run.read() == [("A", "x⋈b", 9, {})]
    with Run(left=True) as run:
        run.table.pipe_input("A", "a", 2)
        run.stream.pipe_input("A", "y", 7)
        run.table.pipe_input("A", None, 5)
        run.stream.pipe_input("A", "x", 9)
        assert run.read() == [("A", "y⋈a", 7, {}), ("A", "y⋈None", 7, {UPDATE: b"1"}),
                              ("A", "x⋈None", 9, {})]


def test_the_grace_follows_the_stream_and_the_history_the_table():
    """Issue 39 (Kafka 4.3.1's rule: its versioned store's time moves with table records
    only, its stream buffer's with stream records only): table ``b@0 t0``, stream
    ``b@24 s4``, table ``b@4 t5`` — the stream record far ahead does not make the table
    update late, and s4, within the grace, is corrected to ``s4+t5`` as Kafka joins it.
    The record at 6 is past the grace (stream time 24 - 10) and stays as it was."""
    with Run(grace_ms=10) as run:
        run.table.pipe_input("b", "t0", 0)
        run.stream.pipe_input("b", "s6", 6)
        run.stream.pipe_input("b", "s4", 24)
        assert run.read() == [("b", "s6⋈t0", 6, {}), ("b", "s4⋈t0", 24, {})]
        run.table.pipe_input("b", "t5", 4)
        assert run.read() == [("b", "s4⋈t5", 24, {UPDATE: b"1"})]
        assert run.driver.metrics()["dropped_records"] == 0


def test_table_records_do_not_move_the_grace():
    """A table update far ahead (B at 40) neither closes the grace of the stream record
    at 6 nor refuses A's update at 5 when the history reaches back that far: the record
    gets its first match from it."""
    with Run(grace_ms=10, history_ms=100) as run:
        run.stream.pipe_input("A", "s", 6)
        run.table.pipe_input("B", "b", 40)
        run.table.pipe_input("A", "a", 5)
        assert run.read() == [("A", "s⋈a", 6, {})]


def test_updates_older_than_the_table_history_are_dropped():
    """History 10 behind the table's time: once a table record at 40 arrived, A's update
    at 5 is dropped (counted) and corrects nothing; lookups within the history see the
    versions kept."""
    with Run(grace_ms=10) as run:
        run.table.pipe_input("A", "a", 2)
        run.stream.pipe_input("A", "s8", 8)
        run.table.pipe_input("B", "b", 40)
        run.read()
        dropped = run.driver.metrics()["dropped_records"]
        run.table.pipe_input("A", "late", 5)
        assert run.read() == []
        assert run.driver.metrics()["dropped_records"] == dropped + 1
        run.stream.pipe_input("A", "s35", 35)
        assert run.read() == [("A", "s35⋈a", 35, {})]


def test_the_latest_version_never_expires():
    """Issue 39 against Kafka 4.3.1 (RocksDBVersionedStore.get: the latest version never
    expires): table ``b@1 T``, table ``a@100 U``, stream ``b@5 s2``, grace 5 — the
    lookup at 5 is older than the history (100 - 5), yet b's latest version began
    before it and answers: ``s2+T``. A key whose latest version began after the lookup
    answers nothing there, like Kafka's store; where Kafka then joins with no row, we
    count and log a drop (a silently wrong answer otherwise)."""
    with Run(grace_ms=5, left=True) as run:
        run.table.pipe_input("b", "T", 1)
        run.table.pipe_input("c", "x", 1)
        run.table.pipe_input("c", "y", 97)
        run.table.pipe_input("a", "U", 100)
        run.stream.pipe_input("b", "s2", 5)
        run.stream.pipe_input("c", "s3", 5)
        assert run.read() == [("b", "s2⋈T", 5, {})]
        assert run.driver.metrics()["dropped_records"] == 1


def test_a_tombstone_at_the_latest_versions_time_stays_a_version():
    """Our decision (README "Joins with late table updates"): table ``b@5 x``, ``b@5
    null``, then the late ``b@3 y``, stream ``b@7 s``. Kafka's store deletes the
    latest value and, with no older version, forgets the delete: y becomes valid from
    3 on and the record meets it. Ours keeps the tombstone as the version from 5, so y
    is valid in [3, 5) only and the record at 7 meets no row."""
    with Run(grace_ms=10, left=True) as run:
        run.table.pipe_input("b", "x", 5)
        run.table.pipe_input("b", None, 5)
        run.table.pipe_input("b", "y", 3)
        run.stream.pipe_input("b", "s", 7)
        run.stream.pipe_input("b", "r", 4)
        assert run.read() == [("b", "s⋈None", 7, {}), ("b", "r⋈y", 4, {})]


def test_history_retention_of_a_versioned_table():
    """``Materialized.as_versioned(name, history_retention=d)``: the join keeps ``d`` of
    the table's history (not only its grace); a grace longer than the history is
    refused at build (Kafka's StreamTableJoinNode), and so is as_versioned anywhere but
    a table read from a topic."""
    with Run(grace_ms=5, history_ms=100) as run:
        run.table.pipe_input("A", "a", 0)
        run.table.pipe_input("B", "b", 50)
        run.table.pipe_input("A", "late", 10)     # 10 >= 50 - 100: kept
        run.stream.pipe_input("A", "s", 12)
        assert run.read() == [("A", "s⋈late", 12, {})]
    with pytest.raises(TopologyError, match="longer than the history retention"):
        grace_join(10, history_ms=5)
    builder = StreamsBuilder()
    with pytest.raises(TopologyError, match="as_versioned"):
        builder.stream("s").group_by_key().count(Materialized.as_versioned("c", 10))


def _stores(tmp: str):
    stores = open_task_stores(tmp, [StoreSpec("v", logging=False), StoreSpec("b", logging=False)])
    stores.begin(0)
    return stores


def _entries(store) -> list[bytes]:
    return [k for k, _ in store.all()]


def test_expiry_deletes_history_and_buffered_records_but_keeps_latest_versions():
    """After stream time moves past the grace, the versioned store keeps only the
    version valid at the history start (and every key's latest one), tombstones
    older than that go, and the buffer drops records older than the history start."""
    with tempfile.TemporaryDirectory() as tmp:
        stores = _stores(tmp)
        v = VersionedKeyValueStore("v", stores["v"], S, S, history_ms=10)
        b = StreamBuffer("b", stores["b"], S, S)
        assert v.put("B", "b1", 1) and v.put("C", "c1", 1) and v.put("C", None, 2)
        for ts, value in ((1, "a1"), (3, "a3"), (20, "a20"), (25, "a25")):
            assert v.put("A", value, ts)
        assert not v.put("B", "too late", 14)              # older than 25 - 10
        for ts in (5, 18, 22):
            b.put("A", f"s{ts}", ts)
        v.write_back(); b.write_back(); stores.commit()
        stores.begin(1)
        v = VersionedKeyValueStore("v", stores["v"], S, S, history_ms=10)
        b = StreamBuffer("b", stores["b"], S, S)
        assert v.observed_time == 25                      # restored from the store
        v.observe(31)                                      # history starts at 21
        v.expire()
        b.expire(v.history_start)
        assert v.versions("A") == [("a20", 20), ("a25", 25)]
        assert v.versions("B") == [("b1", 1)]             # the latest version stays
        assert v.versions("C") == []                       # an old tombstone goes
        assert b.fetch("A", 0) == [(22, "s22", ())]
        v.write_back(); b.write_back(); stores.commit()
        stores.begin(2)
        v = VersionedKeyValueStore("v", stores["v"], S, S, history_ms=10)
        assert v.versions("A") == [("a20", 20), ("a25", 25)] and v.get_as_of("A", 21) == ("a20", 20)
        assert v.get_as_of("A", 20) is None               # older than the history
        # what is left in the byte stores: 3 versions + their index entries + meta
        assert len(_entries(stores["v"])) == 2 * 3 + 1
        assert len(_entries(stores["b"])) == 2 * 1 + 1
        stores.close()


def test_the_join_expires_its_stores_as_stream_time_moves():
    """Through the join: after stream time passed the grace, the buffer holds only the
    records within it (observed in the task's byte stores)."""
    with Run(grace_ms=10) as run:
        for ts in range(0, 50, 5):
            run.table.pipe_input("A", f"a{ts}", ts)
            run.stream.pipe_input("A", f"s{ts}", ts)
        task = run.driver._tasks[0]
        kinds = {d.kind.value: name for name, d in task.topology.stores.items()}
        buffer = task._stores[kinds["stream_buffer"]]
        versions = task._stores[kinds["versioned"]]
        times = sorted(StreamBuffer("b", buffer, S, S).fetch("A", -1))
        assert [t for t, _, _ in times] == [40, 45]     # Kafka evicts at stream time ≥ ts + grace
        assert [t for _, t in VersionedKeyValueStore("v", versions, S, S, 10).versions("A")] == [35, 40, 45]


def test_store_kinds_are_registered():
    assert {"versioned", "stream_buffer"} <= {kind.value for kind in STORE_KINDS}


# -- the property ------------------------------------------------------------------------
KEYS = st.sampled_from(["A", "B", "C"])
TABLE_EVENT = st.tuples(st.just("t"), KEYS, st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d"])),
                        st.integers(0, 40))
STREAM_EVENT = st.tuples(st.just("s"), KEYS, st.just(""), st.integers(0, 40))


def unique_stream_records(events: list[tuple]) -> list[tuple]:
    """Events with at most one stream record per (key, timestamp), each with its own value."""
    seen, kept = set(), []
    for i, (kind, key, value, ts) in enumerate(events):
        if kind == "s":
            if (key, ts) in seen:
                continue
            seen.add((key, ts))
            value = f"s{i}"
        kept.append((kind, key, value, ts))
    return kept


EVENTS = st.lists(st.one_of(TABLE_EVENT, STREAM_EVENT), max_size=40).map(unique_stream_records)


def run_events_on_driver(events: list[tuple], left: bool) -> list[tuple]:
    with Run(grace_ms=1000, left=left) as run:
        for kind, key, value, ts in events:
            (run.table if kind == "t" else run.stream).pipe_input(key, value, ts)
        return run.read()


def matched(results: dict) -> dict:
    return {k: v for k, v in results.items() if v is not None}


@settings(max_examples=60, deadline=None)
@given(events=EVENTS, left=st.booleans())
def test_final_results_equal_the_join_with_the_version_valid_at_each_timestamp(events, left):
    """Random interleavings of table updates (tombstones too) and stream records, all
    within grace: the last result per stream record is its join with the table version
    valid at its timestamp; only corrections carry the header."""
    final = final_results(run_events_on_driver(events, left))
    assert matched(final) == matched(oracle(events, left))
    if left:
        assert final.keys() == oracle(events, left).keys()


def test_enrichment_example_under_the_driver():
    """examples/enrichment: the bundled events (batch 2 = late customer updates) give
    each order one first result, and five corrections with the header."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "enrichment"))
    from enrichment import OUTPUT, build_topology, read_events
    with TopologyTestDriver(build_topology(), config()) as driver:
        topics = {name: driver.create_input_topic(name, S, S) for name in ("orders", "customers")}
        for _, events in sorted(read_events(Path(sys.path[0]) / "data" / "events.tsv").items()):
            for topic, key, value, timestamp in events:
                topics[topic].pipe_input(key, value, timestamp)
        records = driver.create_output_topic(OUTPUT, S, S).read_records_to_list()
    corrections = [(r.key, r.value) for r in records if UPDATE in r.headers]
    assert len(records) - len(corrections) == 6
    assert corrections == [("c1", "o3: 5 pens for Alice (gold since 10:10)"),
                           ("c3", "o4: 1 desk for Carol (new)"),
                           ("c2", "o2: 1 lamp for Bob (silver)"), ("c2", "o6: 3 mugs for Bob (silver)"),
                           ("c2", "o6: 3 mugs for Bob (gold)")]


@pytest.mark.parametrize("left", [False, True], ids=["inner", "left"])
def test_a_lookup_older_than_the_history_whose_version_expired_is_a_counted_drop(left, caplog, monkeypatch):
    """b@0 t0, then b@100 t1 ages the history (10 ms) past 0: a stream record at 50 meets a
    time whose version (t0) is gone. Kafka joins it as if the table had no row; we drop
    it, count it in dropped_records and log it, never emit a wrong answer. A record at 100
    or later still meets t1, and a key whose latest version began by then still joins it."""
    monkeypatch.setattr(drops, "_last_drop_warning", {})   # the warnings' rate limit, per test
    with Run(grace_ms=10, left=left) as run, caplog.at_level("WARNING", logger="streamlib.drops"):
        run.table.pipe_input("b", "t0", 0)
        run.table.pipe_input("c", "u0", 0)
        run.table.pipe_input("b", "t1", 100)
        run.stream.pipe_input("b", "s", 50)
        run.stream.pipe_input("c", "s", 50)
        run.stream.pipe_input("b", "s", 101)
        assert run.read() == [("c", "s⋈u0", 50, {}), ("b", "s⋈t1", 101, {})]
        assert run.driver.metrics()["dropped_records"] == 1
        assert "older than the table's history" in caplog.text and "from topic 'stream' partition 0 offset 0" in caplog.text
        by_reason = run.driver.metrics()["drops"]
        assert list(by_reason) == ["expired_table_version"] and list(by_reason["expired_table_version"].values()) == [1]
