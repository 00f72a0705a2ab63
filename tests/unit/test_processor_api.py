"""The Processor API's own rules: the context a processor sees, fixed keys, store kinds,
and punctuators that fire once per interval across batches, re-runs and restarts."""
from __future__ import annotations

from datetime import timedelta

import pytest

from streamlib import (Consumed, FixedKeyProcessor, Materialized, Processor, PunctuationType, Record, Serdes, Stores,
                       StreamsBuilder, TopologyError, Window, Windowed)
from streamlib.processors import ProcessingError
from streamlib.runtime.task import Task
from streamlib.state import open_task_stores

from streams_helpers import APP, L, S, config, driver_for, kvt

INPUT, OUTPUT = "input", "output"


def _stream(builder):
    return builder.stream(INPUT, consumed=Consumed.with_(S, S))


def test_context_names_the_task_record_and_times():
    seen = []

    class Probe(Processor):
        def init(self, context):
            self.context = context
            context.schedule(10, PunctuationType.STREAM_TIME, self.tick)

        def process(self, record):
            c = self.context
            seen.append(("process", c.task_id, c.record_metadata, c.current_stream_time_ms,
                         c.current_system_time_ms))

        def tick(self, time):
            seen.append(("tick", time, self.context.record_metadata))

    builder = StreamsBuilder()
    _stream(builder).process(Probe)
    with driver_for(builder) as driver:
        inp = driver.create_input_topic(INPUT, S, S)
        inp.pipe_input("k", "v", 5)
        driver.advance_wall_clock_time(100)
        inp.pipe_input("k", "v", 3)
    assert seen == [("process", "0_0", (INPUT, 0, 0), 5, 0), ("tick", 5, None),
                    ("process", "0_0", (INPUT, 0, 1), 5, 100)]


def test_process_values_may_not_change_the_key():
    class ChangesKey(FixedKeyProcessor):
        def process(self, record):
            self.context.forward(Record("other", record.value, record.timestamp))

    class TriesWithKey(FixedKeyProcessor):
        def process(self, record):
            self.context.forward(record.with_key("other"))

    for processor, message in [(ChangesKey, "may not change keys"), (TriesWithKey, "key cannot change")]:
        builder = StreamsBuilder()
        _stream(builder).process_values(processor, named="fkp").to(OUTPUT)
        with driver_for(builder) as driver, pytest.raises(ProcessingError, match=message) as caught:
            driver.create_input_topic(INPUT, S, S).pipe_input("k", "v", 1)
        assert "fkp" in str(caught.value) and "offset 0" in str(caught.value)


def test_process_values_keeps_the_key_so_no_repartition_follows():
    class Upper(FixedKeyProcessor):
        def process(self, record):
            self.context.forward(record.with_value(record.value.upper()))

    class Rekey(Processor):
        def process(self, record):
            self.context.forward(record.with_key(record.value))

    builder = StreamsBuilder()
    _stream(builder).process_values(Upper).group_by_key().count()
    assert len(builder.build().subtopologies) == 1
    builder = StreamsBuilder()
    _stream(builder).process(Rekey).group_by_key().count()
    assert len(builder.build().subtopologies) == 2   # process() may change keys: repartitioned


def test_schedule_outside_init_and_unconnected_stores_are_errors():
    class SchedulesLate(Processor):
        def process(self, record):
            self.context.schedule(10, PunctuationType.STREAM_TIME, print)

    class ReadsOtherStore(Processor):
        def process(self, record):
            self.context.get_state_store("elsewhere")

    for processor, message in [(SchedulesLate, "allowed in init"), (ReadsOtherStore, "no access to store")]:
        builder = StreamsBuilder()
        builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("elsewhere")))
        _stream(builder).process(processor, named="p")
        with driver_for(builder) as driver, pytest.raises(ProcessingError, match=message):
            driver.create_input_topic(INPUT, S, S).pipe_input("k", "v", 1)


def test_unknown_store_and_wrong_builder_fail_at_build():
    builder = StreamsBuilder()
    _stream(builder).process(Processor, "missing", named="p")
    with pytest.raises(TopologyError, match="p: unknown store 'missing'"):
        builder.build()
    with pytest.raises(TopologyError, match="window store builder needs a window supplier"):
        Stores.window_store_builder(Stores.persistent_key_value_store("kv"))
    with pytest.raises(TopologyError, match="at most the retention period"):
        Stores.persistent_window_store("w", retention_period=10, window_size=20)
    builder = StreamsBuilder()
    builder.global_table("products", materialized=Materialized.as_("products-store"))
    _stream(builder).process(Processor, "products-store", named="p")
    with pytest.raises(TopologyError, match="p: 'products-store' is a global table's store"):
        builder.build()
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("s")))
    with pytest.raises(TopologyError, match="store name 's'"):
        builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("s")))


def test_a_cancelled_punctuator_stays_cancelled_in_later_batches():
    fired = []

    class Once(Processor):
        def init(self, context):
            self.cancellable = context.schedule(10, PunctuationType.STREAM_TIME, self.tick)

        def tick(self, time):
            fired.append(time)
            self.cancellable.cancel()

        def process(self, record):
            pass

    builder = StreamsBuilder()
    _stream(builder).process(Once)
    with driver_for(builder) as driver:
        inp = driver.create_input_topic(INPUT, S, S)
        for ts in (5, 15, 25, 35):
            inp.pipe_input("k", "v", ts)
    assert fired == [5]


def test_key_value_store_reads_see_the_batch_writes_in_key_order():
    class Scans(Processor):
        def init(self, context):
            self.context = context
            self.store = context.get_state_store("kv")

        def process(self, record):
            self.store.put(record.key, record.value)
            if record.value == "go":
                self.store.delete("b")
                items = {"all": list(self.store.all()), "range": list(self.store.range("a", "c")),
                         "reverse": list(self.store.reverse_range("a", "c")),
                         "reverse_all": list(self.store.reverse_all()),
                         "prefix": list(self.store.prefix_scan("c"))}
                self.context.forward(record.with_value(repr(items)))

    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("kv"), S, S))
    _stream(builder).process(Scans, "kv").to(OUTPUT)
    with driver_for(builder) as driver:
        inp = driver.create_input_topic(INPUT, S, S)
        for key in ("c", "a", "b", "cz"):
            inp.pipe_input(key, key.upper(), 1)
        inp.pipe_input("d", "go", 2)
        items = eval(driver.create_output_topic(OUTPUT, S, S).read_value())
    assert items == {"all": [("a", "A"), ("c", "C"), ("cz", "CZ"), ("d", "go")],
                     "range": [("a", "A"), ("c", "C")], "reverse": [("c", "C"), ("a", "A")],
                     "reverse_all": [("d", "go"), ("cz", "CZ"), ("c", "C"), ("a", "A")],
                     "prefix": [("c", "C"), ("cz", "CZ")]}


def test_window_session_and_versioned_stores():
    class Uses(Processor):
        def init(self, context):
            self.windows = context.get_state_store("w")
            self.sessions = context.get_state_store("s")
            self.versions = context.get_state_store("v")

        def process(self, record):
            start = record.timestamp - record.timestamp % 100
            self.windows.put(record.key, (self.windows.fetch(record.key, start) or 0) + 1, start)
            self.sessions.put(Windowed(record.key, Window(record.timestamp, record.timestamp)), record.value)
            self.versions.put(record.key, record.value, record.timestamp)

    builder = StreamsBuilder()
    builder.add_state_store(Stores.window_store_builder(
        Stores.persistent_window_store("w", timedelta(milliseconds=1000), timedelta(milliseconds=100)), S, L))
    builder.add_state_store(Stores.session_store_builder(Stores.persistent_session_store("s", 1000), S, S))
    builder.add_state_store(Stores.versioned_key_value_store_builder(
        Stores.persistent_versioned_key_value_store("v", 10_000), S, S))
    _stream(builder).process(Uses, "w", "s", "v")
    with driver_for(builder) as driver:
        inp = driver.create_input_topic(INPUT, S, S)
        for ts, value in [(10, "a"), (50, "b"), (150, "c"), (2000, "d")]:
            inp.pipe_input("k", value, ts)
        windows = driver.get_window_store("w")
        # windows before stream time - retention (2000 - 1000) are gone
        assert windows.fetch("k", 0, 3000) == [(2000, 1)]
        assert [(w.window.start, v) for w, v in driver.get_session_store("s").fetch_sessions("k")] == [(2000, "d")]
    # the versioned store as of a time, and the window store within its retention
    fetched = []

    class Writes(Processor):
        def init(self, context):
            self.windows = context.get_state_store("w")
            self.versions = context.get_state_store("v")

        def process(self, record):
            start = record.timestamp - record.timestamp % 100
            self.windows.put(record.key, (self.windows.fetch(record.key, start) or 0) + 1, start)
            self.versions.put(record.key, record.value, record.timestamp)

    class Reads(Processor):
        def init(self, context):
            self.versions = context.get_state_store("v")
            self.windows = context.get_state_store("w")

        def process(self, record):
            fetched.append((self.versions.get("k"), self.versions.get("k", 60), self.windows.fetch("k", 0, 500)))

    builder = StreamsBuilder()
    builder.add_state_store(Stores.window_store_builder(Stores.persistent_window_store("w", 1000, 100), S, L))
    builder.add_state_store(Stores.versioned_key_value_store_builder(
        Stores.persistent_versioned_key_value_store("v", 10_000), S, S))
    stream = _stream(builder)
    stream.process(Writes, "w", "v")
    stream.filter(lambda k, v: v == "read").process(Reads, "w", "v")
    with driver_for(builder) as driver:
        inp = driver.create_input_topic(INPUT, S, S)
        for ts, value in [(10, "a"), (50, "b"), (150, "read")]:
            inp.pipe_input("k", value, ts)
    assert fetched == [(("read", 150), ("b", 50), [(0, 2), (100, 1)])]


def _task_run(topology, state_dir, batch_id, records, wall_clock=0, rerun_of_failed=False):
    """One batch of the first sub-topology's task over fresh store handles (a restart
    every batch); returns the output rows as (key bytes, value bytes, timestamp)."""
    cfg = config(state_dir=str(state_dir), cache_max_bytes=0)
    task = Task(topology, topology.subtopologies[0], 0, cfg)
    stores = open_task_stores(str(state_dir / "task"), task.store_specs())
    try:
        task.begin(stores, batch_id, wall_clock=wall_clock)
        for offset, (key, value, ts) in records:
            task.process(INPUT, 0, offset, ts, key.encode(), value.encode())
        task.punctuate_wall_clock(wall_clock + 1)
        task.commit()
        return [(k, v, ts) for _, _, ts, k, v, _ in task.take_output()]
    finally:
        stores.close()


def test_punctuators_fire_once_per_interval_across_restarts_and_re_runs(tmp_path):
    class Ticks(Processor):
        def init(self, context):
            self.context = context
            context.schedule(10, PunctuationType.STREAM_TIME, self.stream_tick)
            context.schedule(1000, PunctuationType.WALL_CLOCK_TIME, self.wall_tick)

        def stream_tick(self, time):
            self.context.forward(Record("stream", str(time), time))

        def wall_tick(self, time):
            self.context.forward(Record("wall", str(time), max(self.context.current_stream_time_ms, 0)))

        def process(self, record):
            pass

    builder = StreamsBuilder()
    _stream(builder).process(Ticks).to(OUTPUT)
    topology = builder.build()
    assert _task_run(topology, tmp_path, 1, [(0, ("k", "v", 5))], wall_clock=0) == [(b"stream", b"5", 5)]
    # batch 2 fails after its punctuations (never committed) ...
    cfg = config(state_dir=str(tmp_path), cache_max_bytes=0)
    task = Task(topology, topology.subtopologies[0], 0, cfg)
    stores = open_task_stores(str(tmp_path / "task"), task.store_specs())
    task.begin(stores, 2, wall_clock=1500)
    task.process(INPUT, 0, 1, 12, b"k", b"v")
    task.punctuate_wall_clock(1501)
    assert len(task.take_output()) == 2
    stores.close()
    # ... and is re-run by a restarted task: the same punctuations, once
    assert _task_run(topology, tmp_path, 2, [(1, ("k", "v", 12))], wall_clock=1500) == [
        (b"stream", b"12", 12), (b"wall", b"1501", 12)]
    # a later batch: the stream timer is due at 20, the wall-clock one at 2000
    assert _task_run(topology, tmp_path, 3, [(2, ("k", "v", 19))], wall_clock=1800) == []
    assert _task_run(topology, tmp_path, 4, [(3, ("k", "v", 20))], wall_clock=2500) == [
        (b"stream", b"20", 20), (b"wall", b"2501", 20)]


def test_a_user_stores_changelog_topic_gets_the_builders_configs(tmp_path):
    from streamlib.preflight import prepare_changelogs
    from streamlib.topics import open_backend

    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("seen"))
                            .with_logging_enabled({"retention.ms": 86_400_000, "min.insync.replicas": "2"}))
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("scratch"))
                            .with_logging_disabled())
    _stream(builder).process(Processor, "seen", "scratch")
    topology = builder.build()
    backend = open_backend(f"local://{tmp_path}")
    cfg = config(bootstrap=f"local://{tmp_path}", checkpoint_location=str(tmp_path / "checkpoint"))
    prepare_changelogs(topology, cfg, backend, {0: 2})
    info = backend.describe_topic(cfg.changelog_topic("seen"))
    assert info.partitions == 2
    assert info.config == {"cleanup.policy": "compact", "min.insync.replicas": "2", "retention.ms": "86400000"}
    assert cfg.changelog_topic("scratch") not in backend.list_topics()


def test_a_processor_reads_a_tables_store():
    class Enrich(Processor):
        def init(self, context):
            self.context = context
            self.prices = context.get_state_store("prices-store")

        def process(self, record):
            self.context.forward(record.with_value(f"{record.value}@{self.prices.get(record.key)}"))

    builder = StreamsBuilder()
    builder.table("prices", consumed=Consumed.with_(S, S), materialized=Materialized.as_("prices-store"))
    _stream(builder).process(Enrich, "prices-store").to(OUTPUT)
    topology = builder.build()
    assert len(topology.subtopologies) == 1
    with driver_for(topology) as driver:
        prices = driver.create_input_topic("prices", S, S)
        orders = driver.create_input_topic(INPUT, S, S)
        orders.pipe_input("apple", "o1", 1)
        prices.pipe_input("apple", "3", 2)
        orders.pipe_input("apple", "o2", 3)
        assert kvt(driver.create_output_topic(OUTPUT, S, S).read_records_to_list()) == [
            ("apple", "o1@None", 1), ("apple", "o2@3", 3)]


def test_an_idle_task_punctuates_when_moved_to_the_applications_stream_time(tmp_path):
    """Under Spark a task whose partitions got nothing is advanced to the application's
    stream time at the batch boundary: its stream-time punctuators fire then."""

    class Ticks(Processor):
        def init(self, context):
            self.context = context
            context.schedule(10, PunctuationType.STREAM_TIME, self.tick)

        def tick(self, time):
            self.context.forward(Record("tick", str(time), time))

        def process(self, record):
            pass

    builder = StreamsBuilder()
    _stream(builder).process(Ticks).to(OUTPUT)
    topology = builder.build()
    cfg = config(state_dir=str(tmp_path), cache_max_bytes=0)
    task = Task(topology, topology.subtopologies[0], 0, cfg)
    stores = open_task_stores(str(tmp_path / "task"), task.store_specs())
    ticks = []
    try:
        for batch, stream_time, records in [(1, -1, [(0, 5)]), (2, 25, []), (3, 25, [])]:
            task.begin(stores, batch, stream_time)   # batches 2 and 3: no records of its own
            for offset, ts in records:
                task.process(INPUT, 0, offset, ts, b"k", b"v")
            task.commit()
            ticks.append([ts for _, _, ts, _, _, _ in task.take_output()])
        assert ticks == [[5], [25], []]
    finally:
        stores.close()
