"""Task stores kept open by Spark's Python workers between batches: held while the
application runs, all closed when it stops, per application when two run in one process."""
from __future__ import annotations

import glob
import os
from datetime import timedelta

from streamlib import Streams
from streamlib.state.rocksdb import lock_held_elsewhere
from engine import Workspace, python_count, wordcount_topology


def held_locks(state_dir: str) -> list[str]:
    """The task stores' RocksDB LOCK files some other process (a Python worker) holds."""
    return [lock for lock in glob.glob(os.path.join(state_dir, "*", "*", "LOCK")) if lock_held_elsewhere(lock)]


def started(spark, ws: Workspace, application_id: str) -> Streams:
    app = Streams(wordcount_topology(output=f"{application_id}-out"),
                  ws.config(application_id=application_id, commit_interval=timedelta(milliseconds=100)),
                  spark=spark)
    app.start()
    return app


def test_workers_hold_stores_between_batches_and_stop_closes_them_per_application(spark, tmp_path):
    ws = Workspace(tmp_path)
    first_lines, more_lines = ["a b a", "c a"], ["b b", "d"]
    ws.produce("lines", [(None, line) for line in first_lines], partitions=2)
    one, two = started(spark, ws, "one"), started(spark, ws, "two")
    try:
        one._query.processAllAvailable()
        two._query.processAllAvailable()
        one_dir, two_dir = one.config.application_state_dir, two.config.application_state_dir
        # between batches the workers keep both applications' stores open
        assert held_locks(one_dir) and held_locks(two_dir)
        one.stop()
        assert held_locks(one_dir) == []      # stop() closed every cached store of "one" ...
        assert held_locks(two_dir)            # ... and none of the other application's
        ws.produce("lines", [(None, line) for line in more_lines])
        two._query.processAllAvailable()
        assert dict(two.store("counts").all()) == dict(python_count(first_lines + more_lines))
        # "one" restarts in this process (new lock, new run): counts go on, nothing stale
        one = Streams(wordcount_topology(output="one-out"), ws.config(application_id="one"), spark=spark)
        one.process_available()
        assert dict(one.store("counts").all()) == dict(python_count(first_lines + more_lines))
        assert held_locks(one_dir) == []
    finally:
        one.stop()
        two.stop()
    assert held_locks(two_dir) == []
