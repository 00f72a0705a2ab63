"""Spark's Python daemon for streamlib's sessions (``spark.python.daemon.module``).

:func:`streamlib.spark.session.get_or_create_session` names this module as the
daemon of the sessions it creates (unless the user chose another), Spark's documented
way to run code in the daemon before it forks workers. It

- drops Spark's archives from ``sys.path`` where ``streamlib-spark-path.pth`` did not
  (an interpreter started with ``-S``, an install without the .pth), so forked workers
  import pyspark from compiled files (see :mod:`_streamlib_spark_path`);
- imports, once, what every streamlib task needs (:data:`PRELOADED`) before it forks its
  first worker: a fresh worker would otherwise spend 0.3-0.5 s of its first task
  importing them, most of it pandas, which pyarrow imports the first time it converts
  a Python object;
- has each worker acknowledge what the JVM sends at once
  (:mod:`streamlib.spark.worker_sockets`), on the worker's own connection only.

Sessions streamlib did not make keep Spark's own daemon: nothing here runs there.
"""
from __future__ import annotations

import importlib

from _streamlib_spark_path import forget_importers, in_streamlib_session, strip_spark_archives

__all__ = ["PRELOADED", "forget_spark_archives", "preload", "start_worker_task", "strip_spark_archives"]

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
    :func:`forget_spark_archives`, in the workers of streamlib's sessions only (a
    session someone else made, running a streamlib function, keeps its workers as
    they are, for its other functions too)."""
    if in_streamlib_session():
        forget_spark_archives()


def preload() -> None:
    """Import :data:`PRELOADED` (in the daemon, so that every forked worker has them)."""
    for module in PRELOADED:
        importlib.import_module(module)


if __name__ == "__main__":
    strip_spark_archives()
    preload()
    from streamlib.spark.internals import run_spark_daemon
    from streamlib.spark.worker_sockets import with_quick_acks

    run_spark_daemon(with_quick_acks)
