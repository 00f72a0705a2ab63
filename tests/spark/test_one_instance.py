"""One running instance per application, and fixed partition counts: both are
checked at start(), before any store, changelog or sink is touched (issue 11)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from streamlib import Serdes, Streams
from streamlib.errors import ApplicationAlreadyRunning, ChangelogMissing, PartitionCountMismatch
from streamlib.instance import ApplicationLock, lock_paths
from streamlib.reset import reset_application
from engine import Workspace, latest_per_key, python_count, wordcount_topology
from test_engine_spark import random_lines

HOLD_LOCK = """
import sys, time
from streamlib.instance import ApplicationLock
ApplicationLock("app", sys.argv[1:]).acquire()
print("locked", flush=True)
time.sleep(600)
"""


def test_a_lock_held_by_another_process_names_it_and_is_free_after_kill_9(tmp_path):
    paths = [str(tmp_path / "a.lock"), str(tmp_path / "b" / "c.lock")]
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, *paths], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ApplicationAlreadyRunning, match=f"pid {holder.pid} on "):
            ApplicationLock("app", paths).acquire()
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    with ApplicationLock("app", paths) as lock:  # the dead holder left nothing behind
        assert lock.held


def _wait_for(predicate, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.2)


def test_a_second_instance_fails_at_once_and_the_running_one_is_unharmed(spark, tmp_path):
    ws = Workspace(tmp_path)
    first_lines, more_lines = random_lines(500, 1), random_lines(500, 2)
    ws.produce("lines", [(None, line) for line in first_lines], partitions=2)
    running = Streams(wordcount_topology(), ws.config(commit_interval=200), spark=spark)
    running.start()
    try:
        _wait_for(lambda: dict(running.store("counts").all()) == dict(python_count(first_lines)))
        # The dead letter handler would make the second instance create its DLQ topic
        # if it got as far as preparing topics.
        second = Streams(wordcount_topology(), ws.config(deserialization_exception_handler="dead_letter"),
                         spark=spark)
        began = time.time()
        with pytest.raises(ApplicationAlreadyRunning, match=f"'app' is already running \\(pid {os.getpid()}"):
            second.process_available()
        assert time.time() - began < 5
        assert "app-dlq" not in ws.backend.list_topics()
        with pytest.raises(ApplicationAlreadyRunning):
            reset_application(ws.backend, ws.config())
        ws.produce("lines", [(None, line) for line in more_lines])
        expected = dict(python_count(first_lines + more_lines))
        _wait_for(lambda: dict(running.store("counts").all()) == expected)
        assert running.is_running
    finally:
        running.stop()
    assert latest_per_key(ws.read("counts-out", value_serde=Serdes.long())) == expected
    # Stopped, the lock is free again.
    app = ws.run(spark, wordcount_topology())
    assert dict(app.store("counts").all()) == expected
    assert all(os.path.exists(p) for p in lock_paths(ws.config()))


def test_another_task_count_fails_at_start_naming_store_counts_and_reset(spark, tmp_path):
    ws = Workspace(tmp_path)
    lines = random_lines(400, 3)
    ws.produce("lines", [(None, line) for line in lines], partitions=2)
    ws.run(spark, wordcount_topology(), num_partitions=4)
    output = ws.read("counts-out", value_serde=Serdes.long())
    changelog_ends = ws.backend.end_offsets("app-counts-changelog")
    ws.produce("lines", [(None, line) for line in random_lines(50, 4)])
    for tasks in (2, 8):
        app = Streams(wordcount_topology(), ws.config(num_partitions=tasks), spark=spark)
        with pytest.raises(PartitionCountMismatch) as failure:
            app.process_available()
        message = str(failure.value)
        for part in ("'counts'", "app-counts-changelog", "has 4 partitions", f"runs {tasks} tasks",
                     "python -m streamlib reset --application-id app"):
            assert part in message
    assert ws.read("counts-out", value_serde=Serdes.long()) == output
    assert ws.backend.end_offsets("app-counts-changelog") == changelog_ends


def test_a_deleted_changelog_topic_is_a_clear_error_naming_topic_and_reset(spark, tmp_path):
    ws = Workspace(tmp_path)
    ws.produce("lines", [(None, line) for line in random_lines(100, 5)], partitions=2)
    ws.run(spark, wordcount_topology())
    ws.backend.delete_topic("app-counts-changelog")
    with pytest.raises(ChangelogMissing, match="'app-counts-changelog' is missing.*"
                                               "python -m streamlib reset --application-id app"):
        Streams(wordcount_topology(), ws.config(), spark=spark).process_available()
    assert "app-counts-changelog" not in ws.backend.list_topics()
