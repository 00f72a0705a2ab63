"""Windowed aggregations through Spark: the same final results as the driver over several micro-batches, partitions, cache on and off; windows
close on tasks whose partitions got nothing; restarts and lost state emit every final
result exactly once."""
from __future__ import annotations

import random
import shutil
import time
from datetime import timedelta

import pytest

from streamlib import (Consumed, EmitStrategy, Materialized, Produced, Serdes, SessionWindows, SlidingWindows,
                       Streams, StreamsBuilder, Suppressed, TimeWindows)
from streamlib.query.service import last_committed_batch
from streamlib.spark.lower import BatchPlan
from both_engines import Input, Outcome, run_both, run_driver, run_spark
from engine import Workspace

S, L = Serdes.string(), Serdes.long()
SIZE, GRACE = 1000, 200
WINDOWED = Serdes.time_windowed(S, SIZE)


def final_counts_topology(suppress: bool = True, hopping: bool = False):
    builder = StreamsBuilder()
    windows = TimeWindows.of(SIZE, grace=GRACE)
    if hopping:
        windows = windows.advance_by(SIZE // 2)
    table = (builder.stream("events", consumed=Consumed.with_(S, S)).group_by_key()
             .windowed_by(windows).count(materialized=Materialized.as_("counts")))
    if suppress:
        table = table.suppress(Suppressed.until_window_closes())
    table.to_stream().to("final", produced=Produced.with_(WINDOWED, L))
    return builder.build()


def sessions_topology():
    builder = StreamsBuilder()
    (builder.stream("events", consumed=Consumed.with_(S, S)).group_by_key()
     .windowed_by(SessionWindows.with_inactivity_gap(300, grace=100))
     .count(materialized=Materialized.as_("sessions"))
     .to_stream().to("final", produced=Produced.with_(Serdes.session_windowed(S), L)))
    return builder.build()


def sliding_topology():
    builder = StreamsBuilder()
    (builder.stream("events", consumed=Consumed.with_(S, S)).group_by_key()
     .windowed_by(SlidingWindows.of(SIZE, grace=GRACE)).emit_strategy(EmitStrategy.on_window_close())
     .count(materialized=Materialized.as_("sliding"))
     .to_stream().to("final", produced=Produced.with_(WINDOWED, L)))
    return builder.build()


def events(seed: int, n: int = 300, keys: int = 6, late: bool = True) -> list[tuple]:
    """Increasing timestamps; with ``late``, some out of order within grace and a few
    too late. (Which records are late depends on each task's stream time, so inputs
    with late records are compared on one partition, in-order ones on several.)"""
    rng = random.Random(seed)
    clock, out = 0, []
    for _ in range(n):
        clock += rng.randint(0, 60)
        ts = clock - (rng.choice([0, 0, 0, 50, 150, 900]) if late else 0)
        out.append((f"k{rng.randrange(keys)}", "v", max(ts, 0)))
    return out


def assert_outputs_agree(driver, sparked, every_update: bool) -> None:
    """Same output topic on both engines. (Store contents may differ in windows past
    retention: each task expires from the largest window it stored, as in Kafka.)"""
    assert sparked.final("final") == driver.final("final")
    if every_update:
        assert sparked.per_key("final") == driver.per_key("final")


@pytest.mark.parametrize("cache", [True, False], ids=["cached", "uncached"])
def test_final_counts_match_driver_and_model(spark, tmp_path, cache):
    records = events(1)
    inputs = [Input("events", records, partitions=1)]
    driver, sparked = run_both(spark, tmp_path, final_counts_topology, inputs, {"final": (WINDOWED, L)},
                               cache_max_bytes=(1 << 20) if cache else 0, max_records_per_batch=70)
    finals = [(w, n) for w, n, _, _ in sparked.outputs["final"]]
    # exactly one result per window, and each window's final count
    assert len(finals) == len({w for w, _ in finals})
    assert_outputs_agree(driver, sparked, every_update=not cache)


def test_hopping_updates_match_driver(spark, tmp_path):
    """Two partitions, two runs over time-aligned halves of in-order input: every update
    as the driver's. (Batches cut by a record limit: test_batch_parity_cases.py.)"""
    records = events(2, n=200, late=False)
    workspace = Workspace(tmp_path)
    build = lambda: final_counts_topology(suppress=False, hopping=True)  # noqa: E731
    driver = run_driver(build(), [Input("events", records, partitions=2)], {"final": (WINDOWED, L)},
                        workspace.config(cache_max_bytes=0))
    for half in (records[:100], records[100:]):
        workspace.produce("events", half, partitions=2)
        workspace.run(spark, build(), cache_max_bytes=0).stop()
    sparked = Outcome({}, {"final": workspace.read("final", WINDOWED, L, with_partition=True)})
    assert_outputs_agree(driver, sparked, every_update=True)


@pytest.mark.parametrize("cache", [True, False], ids=["cached", "uncached"])
def test_sliding_final_counts_match_driver(spark, tmp_path, cache):
    """Sliding windows, emit on close (KStreamSlidingWindowAggregateTest's final results) over
    micro-batches of 50 records with out-of-order and late records: each window's final count
    once, as the driver emits it."""
    inputs = [Input("events", events(4, n=200), partitions=1)]
    driver, sparked = run_both(spark, tmp_path, sliding_topology, inputs, {"final": (WINDOWED, L)},
                               cache_max_bytes=(1 << 20) if cache else 0, max_records_per_batch=50)
    finals = [w for w, _, _, _ in sparked.outputs["final"]]
    assert finals and len(finals) == len(set(finals))
    assert_outputs_agree(driver, sparked, every_update=True)


def test_sessions_match_driver(spark, tmp_path):
    inputs = [Input("events", events(3, n=200), partitions=1)]
    driver, sparked = run_both(spark, tmp_path, sessions_topology, inputs,
                               {"final": (Serdes.session_windowed(S), L)}, cache_max_bytes=0,
                               max_records_per_batch=50)
    assert_outputs_agree(driver, sparked, every_update=True)


def test_windows_close_on_idle_tasks(spark, tmp_path):
    """Keys on both partitions, then new records on partition 0 only: every task's
    windows close (the application's stream time reaches every task), in-order input."""
    workspace = Workspace(tmp_path)
    workspace.backend.create_topic("events", partitions=2)
    first = [("a", "v", 100), ("b", "v", 200), ("c", "v", 300), ("d", "v", 400)]
    for key, value, ts in first:
        workspace.backend.produce("events", key=key.encode(), value=value.encode(), timestamp=ts,
                                  partition=hash(key) % 2)
    workspace.backend.flush()
    app = workspace.run(spark, final_counts_topology())
    first = app.metrics()
    app.stop()
    assert workspace.read("final", WINDOWED, L) == []
    # four windows: the store's time-index entries are not counted as records
    assert first["estimated_store_sizes"]["counts"] == 4
    assert first["store_sizes"] == first["estimated_store_sizes"]   # its older name
    workspace.backend.produce("events", key=b"z", value=b"v", timestamp=5000, partition=0)
    workspace.backend.flush()
    app = workspace.run(spark, final_counts_topology())
    metrics = app.metrics()
    app.stop()
    finals = {(w.key, w.window.start): n for w, n, _ in workspace.read("final", WINDOWED, L)}
    assert finals == {("a", 0): 1, ("b", 0): 1, ("c", 0): 1, ("d", 0): 1}
    assert metrics["stream_time"] == 5000 and metrics["watermark"] == 5000 - GRACE


def test_a_query_makes_its_tick_rows_once(spark, tmp_path, monkeypatch):
    """A time-aware stage gets one tick row per task in every batch (so idle tasks
    close their windows). The DataFrame of those rows is made once per query, not once
    per batch: ``foreachBatch`` hands every batch a new Python session object for the
    query's one Java session (a frame per batch cost 80-90 ms of py4j calls, and the
    plan kept every one of them)."""
    frames = []
    make = BatchPlan._ticks
    monkeypatch.setattr(BatchPlan, "_ticks",
                        lambda self, session, n: frames.append(make(self, session, n)) or frames[-1])
    workspace = Workspace(tmp_path)
    records = events(5, n=60)
    workspace.produce("events", records)
    app = workspace.run(spark, final_counts_topology(), max_records_per_batch=10)
    batches = app.metrics()["last_batch"] + 1
    app.stop()
    # (later batches reuse the first one's plan, ticks included: spark/plan_template.py)
    assert batches >= 4 and frames
    assert all(frame is frames[0] for frame in frames)
    driver = run_driver(final_counts_topology(), [Input("events", records, partitions=1)], {"final": (WINDOWED, L)},
                        workspace.config())
    assert workspace.read("final", WINDOWED, L) == [(w, n, ts) for w, n, ts, _ in driver.outputs["final"]]


@pytest.mark.parametrize("lose_state", [False, True], ids=["restart", "lost-state"])
def test_restart_emits_each_final_result_once(spark, tmp_path, lose_state):
    records = events(4, n=240, late=False)
    workspace = Workspace(tmp_path)
    halves = records[:120], records[120:]
    for half in halves:
        workspace.produce("events", half, partitions=2)
        app = workspace.run(spark, final_counts_topology(), max_records_per_batch=50)
        app.stop()
        if lose_state:
            shutil.rmtree(workspace.state_dir)
    finals = [(w, n) for w, n, _ in workspace.read("final", WINDOWED, L)]
    assert len(finals) == len({w for w, _ in finals}), "a final result was emitted twice"
    fresh = Workspace(tmp_path / "fresh")
    expected = run_spark(spark, fresh, final_counts_topology(), [Input("events", records, partitions=2)],
                         {"final": (WINDOWED, L)}, max_records_per_batch=50)
    assert sorted(finals, key=repr) == sorted(
        [(w, n) for w, n, _, _ in expected.outputs["final"]], key=repr)


def produce_to_partitions(workspace: Workspace, records: list[tuple]) -> None:
    """``records``: (key, timestamp, partition), into a 2-partition ``events`` topic."""
    workspace.backend.create_topic("events", partitions=2, exist_ok=True)
    for key, ts, partition in records:
        workspace.backend.produce("events", key=key.encode(), value=b"v", timestamp=ts, partition=partition)
    workspace.backend.flush()


def test_restart_after_a_batch_that_left_input_waiting(spark, tmp_path):
    """Batches of 2 records are cut in processing order across partitions (Kafka Streams'
    timestamp-synchronised choice): batch 0 reads "b" at 100 and 150 from partition 1 and
    leaves "z" at 5000 waiting in partition 0, so no pass without records runs and no
    task is advanced; batch 1 reads "z", then the pass without records closes window
    [0, 1000) of "b" with both records. A restart between the two gives the same."""
    records = [("z", 5000, 0), ("b", 100, 1), ("b", 150, 1)]
    stopped = Workspace(tmp_path / "stopped")
    produce_to_partitions(stopped, records)
    app = Streams(final_counts_topology(), stopped.config(max_records_per_batch=2,
                                                          commit_interval=timedelta(seconds=60)), spark=spark)
    app.start()
    deadline = time.monotonic() + 120
    # Stop once Spark has committed batch 0 (else the restart re-runs it, from this log too).
    while last_committed_batch(stopped.config().resolved_checkpoint_location()) is None:
        assert time.monotonic() < deadline and app.is_running, "batch 0 did not commit"
        time.sleep(0.1)
    first = app.metrics()
    app.stop()
    assert stopped.read("final", WINDOWED, L) == []
    assert first["stream_time"] == 150
    app = stopped.run(spark, final_counts_topology(), max_records_per_batch=2)
    dropped = app.metrics()["dropped_records"]
    finals = {(w.key, w.window.start): n for w, n, _ in stopped.read("final", WINDOWED, L)}
    assert finals == {("b", 0): 2}
    assert dropped == 0

    uninterrupted = Workspace(tmp_path / "uninterrupted")
    produce_to_partitions(uninterrupted, records)
    uninterrupted.run(spark, final_counts_topology(), max_records_per_batch=2)
    assert finals == {(w.key, w.window.start): n
                      for w, n, _ in uninterrupted.read("final", WINDOWED, L)}


@pytest.mark.parametrize("hopping", [False, True], ids=["tumbling", "hopping"])
def test_counts_pre_aggregated_by_the_reader_match_driver(spark, tmp_path, hopping):
    """A cached count on update reading a user topic: the reader pre-aggregates its rows
    (spark/window_counts.py); two partitions, in-order input with key-less records: the
    driver's final counts, and every window's count in the store. (Several micro-batches
    for tumbling windows; hopping ones in one, see test_hopping_updates_match_driver.)"""
    records = events(3, n=240, late=False)
    records[7] = (None, "v", records[7][2])
    records[100] = (None, "v", records[100][2])
    build = lambda: final_counts_topology(suppress=False, hopping=hopping)  # noqa: E731
    plan = BatchPlan(spark, build(), Workspace(tmp_path / "plan").config(), None, 2)
    assert list(plan.window_counts) == ["events"]
    driver, sparked = run_both(spark, tmp_path, build, [Input("events", records, partitions=2)],
                               {"final": (WINDOWED, L)}, max_records_per_batch=None if hopping else 60)
    assert_outputs_agree(driver, sparked, every_update=False)
    assert sparked.stores == driver.stores and sparked.stores["counts"]
