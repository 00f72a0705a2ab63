"""Spark tasks' stores kept open between batches (``run_task`` in this process, as a reused
Python worker runs it): a replayed batch, a failed batch, a new run of the application,
a reset and damaged state between runs all give the counts a fresh open gives."""
from __future__ import annotations

import os
import shutil
import time
import uuid

import pyarrow as pa
import pytest

from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder, StreamsConfig
from streamlib.reset import reset_application
from streamlib.topics.spec import BackendSpec
from streamlib.preflight import prepare_changelogs
from streamlib.spark.tasks import STAGE_SCHEMA, StagePlan, run_task
from streamlib.state.cache import STORE_CACHE, release_everywhere
from streamlib.topics import open_backend


def count_topology():
    builder = StreamsBuilder()
    (builder.stream("words", consumed=Consumed.with_(Serdes.string(), Serdes.string()))
     .group_by_key().count(materialized=Materialized.as_("counts"))
     .to_stream().to("counts-out", produced=Produced.with_(Serdes.string(), Serdes.long())))
    return builder.build()


class Runner:
    """One task (sub-topology 0, partition 0) run batch by batch through ``run_task``."""

    def __init__(self, root):
        self.url = f"local://{root / 'log'}"
        self.backend = open_backend(self.url)
        for topic in ("words", "counts-out"):
            self.backend.create_topic(topic, partitions=1, exist_ok=True)
        self.config = StreamsConfig(application_id="app", bootstrap=self.url, state_dir=str(root / "state"),
                                    cache_max_bytes=0)
        self.new_run()
        self.offset = 0

    def new_run(self) -> None:
        """What ``Streams.start()`` does for the tasks: the changelogs made (tasks never
        create topics) and a plan with a new run id."""
        topology = count_topology()
        prepare_changelogs(topology, self.config, self.backend, {sub.id: 1 for sub in topology.subtopologies})
        self.plan = StagePlan(topology, self.config, BackendSpec(self.url), 0, 1, frozenset(), uuid.uuid4().hex)

    def batch(self, batch_id: int, *keys: str) -> None:
        n = len(keys)
        rows = pa.table({"topic": ["words"] * n, "partition": pa.array([0] * n, pa.int32()),
                         "offset": pa.array(range(self.offset, self.offset + n), pa.int64()),
                         "timestamp": pa.array([1000 + batch_id] * n, pa.int64()),
                         "key": [k.encode() for k in keys], "value": [b"x"] * n,
                         "headers": pa.array([[]] * n, STAGE_SCHEMA.field("headers").type)},
                        schema=STAGE_SCHEMA)
        self.offset += n
        run_task(self.plan, batch_id, 0, rows, "app/q", 1000 + batch_id)

    def counts(self) -> dict[str, int]:
        """The latest count per key in the output topic."""
        latest = {}
        end = self.backend.end_offsets("counts-out")[0]
        for r in self.backend.read("counts-out", 0, 0, end):
            latest[r.key.decode()] = Serdes.long().deserialize(r.value)
        return latest

    @property
    def task_dir(self) -> str:
        return self.config.task_state_dir("0_0")


@pytest.fixture
def runner(tmp_path):
    yield Runner(tmp_path)
    STORE_CACHE.close_under(str(tmp_path))


def test_batches_reuse_the_open_stores_and_a_replayed_batch_counts_once(runner):
    hits = STORE_CACHE.hits
    runner.batch(0, "a")
    runner.batch(1, "a", "b")
    assert STORE_CACHE.hits == hits + 1
    runner.batch(1, "a", "b")  # Spark re-runs batch 1: the open copy rolls it back first
    runner.batch(2, "a")
    assert STORE_CACHE.hits == hits + 3
    assert runner.counts() == {"a": 3, "b": 1}


def test_a_failed_batch_closes_its_stores_and_its_writes_are_not_kept(runner):
    runner.batch(0, "a")
    runner.backend.delete_topic("counts-out")
    with pytest.raises(Exception):
        runner.batch(1, "a")  # fails after the stores' commit, at the sink append
    assert runner.task_dir not in STORE_CACHE._entries
    runner.backend.create_topic("counts-out", partitions=1)
    misses = STORE_CACHE.misses
    runner.batch(1, "a")  # the re-run opens afresh, rolls back the failed attempt
    assert STORE_CACHE.misses == misses + 1
    assert runner.counts() == {"a": 2}


def test_a_new_run_of_the_application_does_not_reuse_an_earlier_runs_stores(runner):
    runner.batch(0, "a")
    first = STORE_CACHE._entries[runner.task_dir].stores
    runner.new_run()
    misses = STORE_CACHE.misses
    runner.batch(1, "a")
    assert STORE_CACHE.misses == misses + 1
    assert STORE_CACHE._entries[runner.task_dir].stores is not first
    assert runner.counts() == {"a": 2}


def test_reset_between_runs_starts_counting_afresh(runner):
    runner.batch(0, "a")
    runner.batch(1, "a")
    assert runner.counts() == {"a": 2}
    # the application stopped (a worker of it may still cache the stores) and is reset
    reset_application(runner.backend, runner.config)
    assert runner.task_dir not in STORE_CACHE._entries
    runner.backend.delete_topic("counts-out")
    runner.backend.create_topic("counts-out", partitions=1)
    runner.new_run()
    runner.batch(0, "a")  # batch ids start again from 0
    assert runner.counts() == {"a": 1}


def test_a_store_directory_replaced_while_cached_is_closed_and_rebuilt(runner):
    runner.batch(0, "a")
    runner.batch(1, "a")
    store_dir = os.path.join(runner.task_dir, "counts")
    # someone deletes the copy and a new one appears under the same name (another
    # opener, a restore): the cached handle must not live on beside it
    for _ in range(100):   # (its memtable flush may still be writing a file into it)
        try:
            shutil.rmtree(store_dir)
            break
        except OSError:
            time.sleep(0.01)
    os.makedirs(store_dir)
    deadline = time.monotonic() + 5
    while runner.task_dir in STORE_CACHE._entries and time.monotonic() < deadline:
        time.sleep(0.01)
    assert runner.task_dir not in STORE_CACHE._entries
    runner.batch(2, "a")  # restored from the changelog
    assert runner.counts() == {"a": 3}


def test_damaged_copy_between_runs_is_rebuilt_not_served_from_the_open_handle(runner):
    runner.batch(0, "a")
    runner.batch(1, "a")
    current = os.path.join(runner.task_dir, "counts", "CURRENT")
    with open(current, "wb") as f:  # same directory, same IDENTITY: only the run tells
        f.write(b"garbage\n")
    runner.new_run()
    runner.batch(2, "a")
    assert runner.counts() == {"a": 3}
    store = STORE_CACHE._entries[runner.task_dir].stores._stores["counts"]
    assert store.metrics.dropped_copies == 1  # the damaged copy was dropped and restored


def test_release_everywhere_closes_this_process_entries_first(runner):
    runner.batch(0, "a")
    assert runner.task_dir in STORE_CACHE._entries
    # Without closing them first, looking at the LOCK files would drop this process's
    # own RocksDB locks while it keeps the handles, and report the stores free.
    assert release_everywhere(runner.config.application_state_dir, timeout=5)
    assert runner.task_dir not in STORE_CACHE._entries
    shutil.rmtree(runner.config.application_state_dir)
    runner.batch(1, "a")
    assert runner.counts() == {"a": 2}  # restored from the changelog
