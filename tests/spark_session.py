"""Pytest plugin: one local SparkSession for the whole test session, plus a helper
that runs a script on a ``local-cluster`` (several executor JVMs) in a subprocess."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Settings shared by the test session and the local-cluster subprocesses.
TEST_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
}
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark() -> Iterator["pyspark.sql.SparkSession"]:  # noqa: F821
    """The test session's SparkSession: ``local[2]``, 4 shuffle partitions, no UI,
    the ``streamlib`` data source registered."""
    from streamlib.spark.session import get_or_create_session

    session = get_or_create_session("local[2]", "streamlib-tests", TEST_CONF)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def run_on_local_cluster(script: str, executors: int = 2, timeout: float = 300) -> str:
    """Run ``script`` (Python source; ``spark`` is predefined) in a new process on
    ``local-cluster[executors,1,1024]`` and return its stdout; raise on failure.

    Each executor is its own JVM with its own Python workers and working directory,
    so this catches state that only works inside one process. The script starts once
    every executor has registered.
    """
    prelude = textwrap.dedent(f"""
        from streamlib.spark.session import get_or_create_session
        spark = get_or_create_session("local-cluster[{executors},1,1024]", "streamlib-cluster-test",
                                      {dict(TEST_CONF, **{"spark.executor.memory": "1g"})!r})
        spark.sparkContext.setLogLevel("ERROR")
        import time as _time
        _deadline = _time.time() + 120
        while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() <= {executors}:
            assert _time.time() < _deadline, "executors did not register"
            _time.sleep(0.2)
    """)
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if done.returncode:
        raise AssertionError(f"local-cluster script failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout


@pytest.fixture(scope="session")
def local_cluster():
    """:func:`run_on_local_cluster`, as a fixture."""
    return run_on_local_cluster
