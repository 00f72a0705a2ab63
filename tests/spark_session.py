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


#: What a ``local-cluster`` adds to :data:`TEST_CONF`. It runs three JVMs (the driver with
#: the master and workers, one per executor) and their Python workers on a small machine
#: the rest of the suite (and other work) shares, so under load everything is several
#: times slower, never lost:
LOCAL_CLUSTER_CONF = {
    "spark.executor.memory": "1g",
    # C1 only and a serial collector: an executor lives for seconds, so the C2 compiler's
    # and the parallel collector's threads only take cores from the work on a loaded box
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    # a heartbeat or an RPC answer that comes late under load is not a lost executor
    "spark.network.timeout": "600s",
    "spark.executor.heartbeatInterval": "30s",
}


#: seconds a local-cluster run may take before it counts as hung (see run_on_local_cluster)
LOCAL_CLUSTER_TIMEOUT = 1200


def run_on_local_cluster(script: str, executors: int = 2, timeout: float = LOCAL_CLUSTER_TIMEOUT) -> str:
    """Run ``script`` (Python source; ``spark`` is predefined) in a new process on
    ``local-cluster[executors,1,1024]`` and return its stdout; raise on failure.

    Each executor is its own JVM with its own Python workers and working directory,
    so this catches state that only works inside one process. The script starts once
    every executor has registered, and the session is stopped after it, so the cluster
    shuts down in order (stopping the JVM with the application still registered has the
    master relaunch each executor the shutdown kills, logged as lost executors).

    ``timeout`` (seconds, the executors' registration included) only guards against a
    hang: on a loaded machine a run takes minutes, not the tens of seconds it takes alone.
    """
    prelude = textwrap.dedent(f"""
        import time as _time
        _deadline = _time.time() + {timeout / 2}   # the other half for the script
        from streamlib.spark.session import get_or_create_session
        spark = get_or_create_session("local-cluster[{executors},1,1024]", "streamlib-cluster-test",
                                      {dict(TEST_CONF, **LOCAL_CLUSTER_CONF)!r})
        spark.sparkContext.setLogLevel("ERROR")
        while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() <= {executors}:
            assert _time.time() < _deadline, "executors did not register"
            _time.sleep(0.2)
    """)
    epilogue = "\nspark.stop()\n"
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script) + epilogue],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if done.returncode:
        raise AssertionError(f"local-cluster script failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout


def pytest_collection_modifyitems(items):
    """A test on a local cluster gets the run's hang guard and a margin, not pytest's
    default timeout (shorter: a loaded machine would have it stop a healthy run)."""
    for item in items:
        if "local_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(LOCAL_CLUSTER_TIMEOUT + 120))


@pytest.fixture(scope="session")
def local_cluster():
    """:func:`run_on_local_cluster`, as a fixture."""
    return run_on_local_cluster
