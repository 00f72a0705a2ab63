"""Spark's Python workers without Spark's archives on ``sys.path``.

Spark puts three archives first on every Python worker's ``PYTHONPATH``:
``$SPARK_HOME/python/lib/pyspark.zip``, py4j's source zip, and the ``spark-core`` jar
(``PythonUtils.sparkPythonPath``). Under a pip-installed pyspark the same modules are
installed, with compiled bytecode, in site-packages; imported from the zip they are
compiled again in every new worker. Worse, every Python task starts with
``importlib.invalidate_caches()``, which makes each cached zip importer re-read its
archive's directory: tens of thousands of entries for the jar, 40-80 ms per task.

Where streamlib is installed, ``streamlib-spark-path.pth`` drops the archives at the
start of every such process (:mod:`_streamlib_spark_path`). This module, run as
Spark's daemon (``spark.python.daemon.module``, set by
:func:`streamlib.spark.session.get_or_create_session`), does the same where the .pth
did not run (an interpreter started with ``-S``), then runs Spark's own daemon, so
forked workers import pyspark from compiled files. In a session made otherwise,
:func:`forget_spark_archives`, called by streamlib's task functions, spares every later
task of the worker the re-reading.

The daemon also imports, once, what every streamlib task needs (:data:`PRELOADED`)
before it forks its first worker: a fresh worker would otherwise spend 0.3-0.5 s of its
first task importing them, most of it pandas, which pyarrow imports the first time it
converts a Python object. Spark's own daemon, in a session made otherwise, gets the
same from the .pth (:func:`_streamlib_spark_path.preload_in_spark_daemon`). And each
worker's socket acknowledges what the JVM sends at once
(:mod:`streamlib.spark.worker_sockets`), before the worker reads its task.
"""
from __future__ import annotations

import importlib
import socket
from typing import Callable

from _streamlib_spark_path import forget_importers, strip_spark_archives
from streamlib.spark.worker_sockets import quick_acks, quick_acks_to_jvm

__all__ = ["PRELOADED", "forget_spark_archives", "preload", "start_worker_task", "strip_spark_archives",
           "with_quick_acks"]

#: Modules the daemon imports for the workers it forks.
#: ``pyarrow.acero`` is what ``Table.group_by`` (the aggregations' batch paths) imports on first
#: use; ``streamlib.topics.local`` is the embedded log the tasks' sinks and changelogs write.
PRELOADED = ("pandas", "pyarrow.acero", "streamlib.spark.tasks", "streamlib.spark.source",
             "streamlib.topics.local")


def forget_spark_archives() -> None:
    """In a worker whose pyspark may have come from the zip: drop Spark's archives
    from ``sys.path`` where that is safe (imported packages keep their own paths), and
    their importers from the path importer cache, which Spark's next task would make
    re-read every archive. Cheap when there is nothing to drop: call it every task."""
    strip_spark_archives()
    forget_importers()


def start_worker_task() -> None:
    """What every streamlib function that Spark runs in a Python worker does first:
    :func:`forget_spark_archives`, and quick ACKs on the worker's socket to the JVM
    (also in sessions whose daemon is not streamlib's)."""
    forget_spark_archives()
    quick_acks_to_jvm()


def with_quick_acks(worker: Callable[[socket.socket, bool], int]) -> Callable[[socket.socket, bool], int]:
    """pyspark's ``daemon.worker(sock, authenticated)``, which runs one task on ``sock``
    (called again for each task of a reused worker), with :func:`quick_acks` first."""

    def run(sock: socket.socket, authenticated: bool) -> int:
        quick_acks(sock)
        return worker(sock, authenticated)

    return run


def preload() -> None:
    """Import :data:`PRELOADED` (in the daemon, so that every forked worker has them)."""
    for module in PRELOADED:
        importlib.import_module(module)


if __name__ == "__main__":
    strip_spark_archives()
    preload()
    from pyspark import daemon

    # manager() looks its worker function up in the module for each task it runs
    daemon.worker = with_quick_acks(daemon.worker)
    daemon.manager()
