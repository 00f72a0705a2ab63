"""Spark's Python workers without Spark's archives on ``sys.path``.

Spark puts three archives first on every Python worker's ``PYTHONPATH``:
``$SPARK_HOME/python/lib/pyspark.zip``, py4j's source zip, and the ``spark-core`` jar
(``PythonUtils.sparkPythonPath``). Under a pip-installed pyspark the same modules are
installed, with compiled bytecode, in site-packages; imported from the zip they are
compiled again in every new worker. Worse, every Python task starts with
``importlib.invalidate_caches()``, which makes each cached zip importer re-read its
archive's directory: tens of thousands of entries for the jar, 40-80 ms per task.

This module, run as Spark's daemon (``spark.python.daemon.module``, set by
:func:`streamlib.spark.session.get_or_create_session`), drops the archives when the
installed pyspark is the one zipped, then runs Spark's own daemon, so forked workers
import pyspark from compiled files. In a session made otherwise,
:func:`forget_spark_archives`, called by streamlib's task functions, spares every later
task of the worker the re-reading.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys


def _is_spark_archive(path: str) -> bool:
    name = os.path.basename(path)
    return (name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith("-src.zip"))
            or (name.startswith("spark-core_") and name.endswith(".jar")))


def _installed_pyspark_matches(archives: list[str]) -> bool:
    """Whether a pyspark installed outside ``archives`` is the one zipped in them."""
    zipped = next((p for p in archives if os.path.basename(p) == "pyspark.zip"), None)
    if zipped is None:
        return True   # nothing of pyspark's own to shadow
    spec = importlib.machinery.PathFinder.find_spec("pyspark", [p for p in sys.path if p not in archives])
    if spec is None or not spec.submodule_search_locations:
        return False
    installed = os.path.realpath(list(spec.submodule_search_locations)[0])
    # A pip install keeps the zip inside the package itself (its SPARK_HOME); another
    # SPARK_HOME may hold another version, whose zip must win.
    return os.path.realpath(zipped).startswith(installed + os.sep)


def strip_spark_archives() -> bool:
    """Remove Spark's archives from ``sys.path`` (and their importers from the path
    importer cache) when the installed pyspark is the zipped one; returns whether it did."""
    archives = [p for p in sys.path if _is_spark_archive(p)]
    if not archives or not _installed_pyspark_matches(archives):
        return False
    sys.path[:] = [p for p in sys.path if p not in archives]
    _forget_importers()
    return True


def forget_spark_archives() -> None:
    """In a worker whose pyspark may have come from the zip: drop Spark's archives
    from ``sys.path`` where that is safe (imported packages keep their own paths), and
    their importers from the path importer cache, which Spark's next task would make
    re-read every archive. Cheap when there is nothing to drop: call it every task."""
    strip_spark_archives()
    _forget_importers()


def _forget_importers() -> None:
    # The cache is only a cache: a later import builds the importer again, from the
    # zipimport module's own directory cache.
    for path in [p for p, finder in sys.path_importer_cache.items()
                 if type(finder).__name__ == "zipimporter" and any(
                     _is_spark_archive(part) for part in _prefixes(p))]:
        del sys.path_importer_cache[path]


def _prefixes(path: str) -> list[str]:
    """``path`` and its parent directories (a zip importer's key may point inside its archive)."""
    found = []
    while path and path not in found:
        found.append(path)
        path = os.path.dirname(path)
    return found


if __name__ == "__main__":
    strip_spark_archives()
    from pyspark import daemon

    daemon.manager()
