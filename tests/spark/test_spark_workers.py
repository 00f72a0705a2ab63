"""Spark's Python workers under streamlib's daemon import pyspark from compiled files."""
from __future__ import annotations

import os
import sys

import pyspark
import pytest

from _streamlib_spark_path import SESSION_VARIABLE
from streamlib.spark.daemon import strip_spark_archives

INSTALLED = os.path.dirname(pyspark.__file__)
ZIP = os.path.join(INSTALLED, "python", "lib", "pyspark.zip")
PY4J = os.path.join(INSTALLED, "python", "lib", "py4j-0.10.9.9-src.zip")
JAR = os.path.join(INSTALLED, "jars", "spark-core_2.13-4.1.1.jar")


def test_zips_of_the_installed_pyspark_are_dropped(monkeypatch):
    monkeypatch.setattr(sys, "path", [ZIP, PY4J, "/some/dir", JAR, *sys.path])
    assert strip_spark_archives() is True
    assert ZIP not in sys.path and PY4J not in sys.path and JAR not in sys.path
    assert sys.path[0] == "/some/dir"


def test_zips_of_another_spark_home_are_kept(tmp_path, monkeypatch):
    # A different SPARK_HOME may hold another pyspark version: its zip must win.
    other = str(tmp_path / "python" / "lib" / "pyspark.zip")
    monkeypatch.setattr(sys, "path", [other, *sys.path])
    assert strip_spark_archives() is False
    assert sys.path[0] == other


def test_python_tasks_import_pyspark_from_site_packages(spark):
    assert spark.conf.get("spark.python.daemon.module") == "streamlib.spark.daemon"

    def where(batches):
        import sys as worker_sys

        import pyarrow as pa
        import pyspark as worker_pyspark

        zips = [p for p in worker_sys.path if "pyspark.zip" in p or "py4j" in p or "spark-core" in p]
        for _ in batches:
            yield pa.RecordBatch.from_pydict({"file": [worker_pyspark.__file__], "zips": [",".join(zips)]})

    rows = spark.range(2, numPartitions=2).mapInArrow(where, "file string, zips string").collect()
    assert [(r.file, r.zips) for r in rows] == [(pyspark.__file__, "")] * 2


def test_a_worker_started_from_the_zip_stops_rereading_it(monkeypatch):
    # A session made without streamlib's daemon: pyspark came from the zip, whose
    # importers sit in the path importer cache; Spark's invalidate_caches() at every
    # task start would re-read each of them.
    import zipimport

    from streamlib.spark.daemon import forget_spark_archives

    class FakeZipImporter(zipimport.zipimporter):
        def __init__(self):  # no archive needed: only its type and cache key matter
            pass

    FakeZipImporter.__name__ = "zipimporter"
    entries = {f"{ZIP}/pyspark": FakeZipImporter(), f"{ZIP}/pyspark/sql": FakeZipImporter(),
               JAR: FakeZipImporter()}
    monkeypatch.setattr(sys, "path", [ZIP, PY4J, JAR, *sys.path])
    monkeypatch.setattr(sys, "path_importer_cache", {**sys.path_importer_cache, **entries})
    forget_spark_archives()
    assert ZIP not in sys.path and PY4J not in sys.path and JAR not in sys.path
    assert not set(entries) & set(sys.path_importer_cache)


def test_spark_submit_keeps_a_daemon_module_the_user_chose(tmp_path):
    import subprocess
    from pathlib import Path

    script = tmp_path / "show.py"
    script.write_text("from streamlib.spark.session import get_or_create_session\n"
                      "spark = get_or_create_session()\n"
                      "print('daemon:', spark.sparkContext.getConf().get('spark.python.daemon.module'))\n")
    submit = Path(sys.executable).parent / "spark-submit"
    done = subprocess.run([str(submit), "--master", "local[1]", "--conf", "spark.python.daemon.module=pyspark.daemon",
                           str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert "daemon: pyspark.daemon" in done.stdout, done.stderr[-2000:]


SHOW_PATH = "import sys, pyspark; print(pyspark.__file__); print([p for p in sys.path if 'spark' in p.lower()])"


def test_any_process_spark_starts_for_streamlib_imports_pyspark_from_site_packages():
    # Spark's planner processes, streaming source runner and daemons start with the
    # archives first on PYTHONPATH; in streamlib's sessions (the variable set) the
    # installed streamlib-spark-path.pth drops them.
    import subprocess

    done = subprocess.run([sys.executable, "-c", SHOW_PATH], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([ZIP, PY4J, JAR]),
                               SESSION_VARIABLE: "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [pyspark.__file__, "[]"]


def test_processes_of_other_sessions_keep_sparks_path():
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != SESSION_VARIABLE}
    done = subprocess.run([sys.executable, "-c", SHOW_PATH], capture_output=True, text=True, timeout=60,
                          env={**env, "PYTHONPATH": os.pathsep.join([ZIP, PY4J, JAR])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == repr([ZIP, PY4J, JAR])


def test_the_pth_and_the_module_name_the_same_variable():
    from pathlib import Path

    pth = (Path(__file__).resolve().parents[2] / "streamlib-spark-path.pth").read_text()
    assert f"'{SESSION_VARIABLE}' in os.environ" in pth


def test_streamlibs_sessions_name_the_variable_for_their_processes(spark):
    assert spark.sparkContext.getConf().get(f"spark.executorEnv.{SESSION_VARIABLE}") == "1"


HANDED_OVER_APP = """
import json, sys
from pyspark.sql import SparkSession
from streamlib.spark.session import register_data_sources

spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()

def inside(batches):
    import os, sys
    preloaded = "streamlib.spark.tasks" in sys.modules   # by the daemon the worker was forked from
    import pyarrow as pa
    for _ in batches:
        yield pa.RecordBatch.from_pydict({"seen": [json.dumps([
            [os.path.basename(p) for p in sys.path if p.endswith((".zip", ".jar")) and "spark" in p],
            sorted(k for k in os.environ if k.startswith("STREAMLIB_SPARK")), preloaded])]})

before = spark.range(1, numPartitions=1).mapInArrow(inside, "seen string")
register_data_sources(spark)
after = spark.range(1, numPartitions=1).mapInArrow(inside, "seen string")
print("BEFORE", before.collect()[0].seen)
print("AFTER", after.collect()[0].seen)
spark.stop()
"""


def test_a_session_handed_to_streamlib_marks_the_processes_of_functions_made_afterwards(tmp_path):
    # A user's session handed to streamlib (Streams(spark=...) registers the data
    # sources): streamlib's functions made from then on run in processes marked as
    # streamlib's, which import pyspark from site-packages; the user's earlier ones
    # keep Spark's own workers, path and modules.
    import json
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != SESSION_VARIABLE}
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    script = tmp_path / "handed_over.py"
    script.write_text(HANDED_OVER_APP)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = {line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1]) for line in done.stdout.splitlines()
            if line.startswith(("BEFORE", "AFTER"))}
    archives, variables, preloaded = seen["BEFORE"]
    assert archives[0] == "pyspark.zip" and variables == [] and not preloaded, seen
    # the marked functions' own daemon (Spark keys daemons by environment) preloads
    assert seen["AFTER"] == [[], [SESSION_VARIABLE], True], seen


def test_another_spark_homes_zip_stays_first_at_process_start(tmp_path):
    import shutil
    import subprocess

    other = tmp_path / "python" / "lib"
    other.mkdir(parents=True)
    shutil.copy(ZIP, other / "pyspark.zip")
    show = "import sys; print([p for p in sys.path if p.endswith('pyspark.zip')])"
    done = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(other / "pyspark.zip"), SESSION_VARIABLE: "1"})
    assert done.stdout.strip() == repr([str(other / "pyspark.zip")]), done.stderr


def test_the_daemon_imports_what_tasks_need_before_it_forks_workers(spark):
    # Observed in the daemon itself (the worker's parent): its memory maps hold the
    # native libraries of pandas, pyarrow's compute and rocksdict, so a fresh worker
    # starts with them instead of importing them in its first task.
    def parent_maps(batches):
        import os as worker_os

        import pyarrow as pa

        with open(f"/proc/{worker_os.getppid()}/maps") as maps:
            text = maps.read()
        found = [lib for lib in ("pandas/_libs", "pyarrow/_compute", "rocksdict") if lib in text]
        for _ in batches:
            yield pa.RecordBatch.from_pydict({"found": [",".join(found)]})

    rows = spark.range(1, numPartitions=1).mapInArrow(parent_maps, "found string").collect()
    assert [r.found for r in rows] == ["pandas/_libs,pyarrow/_compute,rocksdict"]



def _loopback_pair():
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    accepted, _ = server.accept()
    server.close()
    return client, accepted


def test_quick_acks_turn_off_nagle_and_delayed_acks_on_a_tcp_socket():
    import socket

    from streamlib.spark.worker_sockets import quick_acks

    client, accepted = _loopback_pair()
    try:
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
        quick_acks(accepted)
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK) == 1
        left, right = socket.socketpair()   # a Unix socket has neither: left alone
        quick_acks(left)
        left.close(), right.close()
    finally:
        client.close(), accepted.close()


def test_quick_acks_touch_the_workers_connection_and_no_other_socket():
    import socket

    from streamlib.spark.worker_sockets import with_quick_acks

    to_jvm, jvm_side = _loopback_pair()
    users, users_peer = _loopback_pair()   # a socket of the user's own, in the same worker
    seen = []
    try:
        with open(os.dup(to_jvm.fileno()), "rb", buffering=0) as infile:
            with_quick_acks(lambda i, o: seen.append(i))(infile, None)
        assert seen == [infile]
        assert to_jvm.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert users.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
        assert users_peer.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
        assert jvm_side.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
        to_jvm.send(b"x")   # the connection still works: only options changed
        assert jvm_side.recv(1) == b"x"
    finally:
        for sock in (to_jvm, jvm_side, users, users_peer):
            sock.close()


def test_streamlibs_daemon_runs_every_task_with_quick_acks_to_the_jvm(spark):
    # Without them every Python task waited about 40 ms for its first Arrow batch.
    from pyspark import daemon

    if not hasattr(daemon, "worker_main"):
        pytest.skip("this PySpark (4.3+) looks its worker entry up after the fork: no hook for quick ACKs")
    def options(batches):
        import os as worker_os
        import socket as worker_socket

        import pyarrow as pa

        found = []
        for fd in worker_os.listdir("/proc/self/fd"):
            try:
                sock = worker_socket.socket(fileno=worker_os.dup(int(fd)))
            except OSError:
                continue
            with sock:
                if sock.family == worker_socket.AF_INET6 or sock.family == worker_socket.AF_INET:
                    found.append(sock.getsockopt(worker_socket.IPPROTO_TCP, worker_socket.TCP_NODELAY))
        for _ in batches:
            yield pa.RecordBatch.from_pydict({"nodelay": [found]})

    rows = spark.range(2, numPartitions=2).mapInArrow(options, "nodelay array<long>").collect()
    # the task's socket, and the worker's two files on it (descriptors of the same socket)
    assert [set(r.nodelay) for r in rows] == [{1}, {1}]
