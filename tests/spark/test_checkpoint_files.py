"""The application's checkpoint logs on the local file system are written by Spark's
FileSystem-based file manager (:mod:`streamlib.spark.checkpoint_files`), only for its
own query, and a checkpoint written by Spark's default manager carries on."""
from __future__ import annotations

import pytest

from streamlib import Serdes, Streams
from streamlib.spark.checkpoint_files import FILE_SYSTEM_MANAGER, MANAGER_SETTING
from engine import Workspace, latest_per_key, python_count, wordcount_topology

FILE_CONTEXT_MANAGER = FILE_SYSTEM_MANAGER.replace("FileSystemBased", "FileContextBased")


@pytest.fixture
def ws(tmp_path):
    return Workspace(tmp_path)


def log_managers(app: Streams) -> set[str]:
    execution = app._query._jsq.streamingQuery()
    return {log.fileManager().getClass().getName() for log in (execution.offsetLog(), execution.commitLog())}


def test_the_query_logs_through_the_file_system_manager_and_the_session_is_left_as_it_was(spark, ws):
    ws.produce("lines", [(None, "a b a")], partitions=2)
    app = Streams(wordcount_topology(), ws.config(), spark=spark)
    app.start()
    try:
        assert log_managers(app) == {FILE_SYSTEM_MANAGER}
        assert spark.conf.get(MANAGER_SETTING, None) is None
    finally:
        app.stop()


def test_a_manager_the_session_names_is_kept(spark, ws):
    ws.produce("lines", [(None, "a b a")], partitions=2)
    spark.conf.set(MANAGER_SETTING, FILE_CONTEXT_MANAGER)
    app = Streams(wordcount_topology(), ws.config(), spark=spark)
    try:
        app.start()
        assert log_managers(app) == {FILE_CONTEXT_MANAGER}
        assert spark.conf.get(MANAGER_SETTING) == FILE_CONTEXT_MANAGER
    finally:
        app.stop()
        spark.conf.unset(MANAGER_SETTING)


def test_a_checkpoint_written_by_sparks_default_manager_carries_on_exactly_once(spark, ws):
    first, second = ["x y z", "y z"], ["z w", "x"]
    ws.produce("lines", [(None, line) for line in first], partitions=2)
    spark.conf.set(MANAGER_SETTING, FILE_CONTEXT_MANAGER)
    try:
        ws.run(spark, wordcount_topology(), max_records_per_batch=1).stop()
    finally:
        spark.conf.unset(MANAGER_SETTING)
    ws.produce("lines", [(None, line) for line in second], partitions=2)
    app = ws.run(spark, wordcount_topology(), max_records_per_batch=1)
    expected = dict(python_count(first + second))
    assert dict(app.store("counts").all()) == expected
    assert latest_per_key(ws.read("counts-out", value_serde=Serdes.long())) == expected
    app.stop()
