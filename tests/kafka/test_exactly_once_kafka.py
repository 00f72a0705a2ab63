"""processing_guarantee="exactly_once" on a real Kafka broker: a task's batch is one
transaction (changelogs, sinks and its batch marker), a zombie is fenced, a re-run of a
committed batch writes nothing, and a query SIGKILLed mid-batch again and again still
leaves each result exactly once for read_committed readers."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from collections import defaultdict
from pathlib import Path

import pytest

from streamlib import Serdes, Streams, StreamsConfig
from streamlib.topics import TopicsError, open_backend, records_to_arrow
from engine import python_count, wordcount_topology
from test_engine_spark import random_lines

TESTS = Path(__file__).resolve().parents[1]


def _rows(*values):
    return records_to_arrow([(b"k", v, 1000 + i, None) for i, v in enumerate(values)])


def _visible(backend, topic, partition=0, wait=10.0, at_least=0):
    """Records a read_committed reader sees (commit markers land asynchronously)."""
    deadline = time.monotonic() + wait
    while backend.end_offsets(topic)[partition] < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
    return [r.value for r in backend.read(topic, partition, 0, backend.end_offsets(topic)[partition])]


def test_task_transaction_commits_once_and_a_rerun_writes_nothing(kafka_bootstrap):
    topic, marker = f"eos-{uuid.uuid4().hex[:8]}", f"m-{uuid.uuid4().hex[:8]}"
    with open_backend(f"kafka://{kafka_bootstrap}", processing_guarantee="exactly_once") as b:
        b.create_topic(topic)
        b.create_topic(marker)
        assert b.begin_task("app-0_0", 0, marker)
        assert b.append(topic, 0, _rows(b"1", b"2"))
        b.commit_task(0)
        assert not b.begin_task("app-0_0", 0, marker)  # a re-run of batch 0
        assert not b.append(topic, 0, _rows(b"1", b"2"))
        b.commit_task(0)
        assert b.begin_task("app-0_0", 1, marker)
        b.append(topic, 0, _rows(b"3"))
        b.abort_task()  # a failed attempt of batch 1 leaves nothing
        assert b.begin_task("app-0_0", 1, marker)
        b.append(topic, 0, _rows(b"3"))
        b.commit_task(1)
        assert _visible(b, topic, at_least=6) == [b"1", b"2", b"3"]


def test_a_restarted_task_fences_its_zombie(kafka_bootstrap):
    topic, marker = f"eos-{uuid.uuid4().hex[:8]}", f"m-{uuid.uuid4().hex[:8]}"
    url = f"kafka://{kafka_bootstrap}"
    with open_backend(url, processing_guarantee="exactly_once") as zombie, \
            open_backend(url, processing_guarantee="exactly_once") as restarted:
        zombie.create_topic(topic)
        zombie.create_topic(marker)
        assert zombie.begin_task("app-1_0", 5, marker)
        zombie.append(topic, 0, _rows(b"zombie"))
        assert restarted.begin_task("app-1_0", 5, marker)  # fences the zombie, aborts its batch
        restarted.append(topic, 0, _rows(b"restarted"))
        restarted.commit_task(5)
        with pytest.raises(TopicsError):
            zombie.commit_task(5)
        assert _visible(restarted, topic, at_least=3) == [b"restarted"]


def _planned_batches(checkpoint: Path) -> int:
    offsets = checkpoint / "offsets"
    return sum(1 for f in offsets.iterdir() if f.name.isdigit()) if offsets.is_dir() else 0


def _run(args, checkpoint: Path, rng: random.Random | None = None):
    """Run one process; with ``rng``, SIGKILL it a random moment after Spark planned
    1-2 more batches (mid-batch or between batches); None if it was killed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(TESTS / "eos_wordcount_run.py"), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if rng is not None:
        target = _planned_batches(checkpoint) + rng.randint(1, 2)
        deadline = time.monotonic() + 600
        while proc.poll() is None and _planned_batches(checkpoint) < target and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0, 1.5))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            return None
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-4000:]
    return out


@pytest.mark.timeout(1200)  # three Spark processes; minutes on a busy 2-core machine
def test_killed_again_and_again_each_result_once(kafka_bootstrap, tmp_path, spark):
    url = f"kafka://{kafka_bootstrap}"
    suffix = uuid.uuid4().hex[:8]
    source, app_id = f"eos-lines-{suffix}", f"eos-wc-{suffix}"
    backend = open_backend(url)
    backend.create_topic(source, partitions=2)
    lines = random_lines(200, 21)
    for line in lines:
        backend.produce(source, value=line.encode())
    backend.flush()
    rng = random.Random(7)
    args, checkpoint = [kafka_bootstrap, app_id, source, str(tmp_path)], tmp_path / "checkpoint"
    kills = sum(_run(args, checkpoint, rng) is None for _ in range(3))
    assert kills >= 2
    config = StreamsConfig(application_id=app_id, bootstrap=url, state_dir=str(tmp_path / "state"),
                           checkpoint_location=str(checkpoint), processing_guarantee="exactly_once",
                           max_records_per_batch=40, num_partitions=2)
    # The last run goes to the end in this session (a new process, like the others,
    # would only add a JVM start).
    app = Streams(wordcount_topology(source=source, output=f"{source}-counts"), config, spark=spark)
    app.process_available()

    expected = dict(python_count(lines))
    # Every count update is in the output exactly once: per key the counts a
    # read_committed reader sees strictly increase (a duplicate batch would repeat them).
    seen = defaultdict(list)
    with open_backend(url) as reader:
        # an output topic of its own: other Kafka tests of the session write counts-out
        for p, end in sorted(reader.end_offsets(f"{source}-counts").items()):
            for r in reader.read(f"{source}-counts", p, 0, end):
                seen[Serdes.string().deserialize(r.key)].append(Serdes.long().deserialize(r.value))
    assert {k: v[-1] for k, v in seen.items() if k in expected} == expected
    for word, counts in seen.items():
        if word in expected:
            assert counts == sorted(set(counts)), (word, counts)
    # The stores equal a failure-free run's.
    assert dict(app.store("counts").all()) == expected
    app.stop()


def _eventually(read, expected, seconds=300.0):
    """``read()`` once it equals ``expected``, or its last value after ``seconds``."""
    deadline = time.monotonic() + seconds
    got = read()
    while got != expected and time.monotonic() < deadline:
        time.sleep(0.2)
        got = read()
    return got


@pytest.mark.timeout(900)
@pytest.mark.parametrize("log", ["kafka", "local"])
def test_exactly_once_replays_nothing_of_its_own_and_live_queries_are_current(log, request, tmp_path, spark):
    """A copy's changelog offset is the position after its own committed transaction:
    no batch restores what the task wrote itself (a fresh application restores nothing
    at all), and the running application's queries reach every batch's counts, also
    the last one's while input is idle (they used to stay one batch behind)."""
    url = (f"kafka://{request.getfixturevalue('kafka_bootstrap')}" if log == "kafka"
           else f"local://{tmp_path / 'log'}")
    suffix = uuid.uuid4().hex[:8]
    source = f"eos-live-{suffix}"
    backend = open_backend(url)
    backend.create_topic(source, partitions=2)
    lines = random_lines(160, 3)
    config = StreamsConfig(application_id=f"eos-live-{suffix}", bootstrap=url,
                           state_dir=str(tmp_path / "state"), checkpoint_location=str(tmp_path / "cp"),
                           processing_guarantee="exactly_once", max_records_per_batch=60,
                           num_partitions=2, commit_interval=timedelta(milliseconds=200))
    app = Streams(wordcount_topology(source=source, output=f"{source}-counts"), config, spark=spark)
    app.start()
    try:
        for start, end in ((0, 80), (80, 160)):
            for line in lines[start:end]:
                backend.produce(source, value=line.encode())
            backend.flush()
            expected = dict(python_count(lines[:end]))
            assert _eventually(lambda: dict(app.store("counts").all()), expected) == expected
        time.sleep(2)   # idle: still current
        assert dict(app.store("counts").all()) == expected
        assert app.metrics()["last_batch"] >= 2
        assert app.metrics()["restored_records"] == 0
    finally:
        app.stop()
