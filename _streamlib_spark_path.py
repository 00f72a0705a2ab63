"""Python processes Spark starts import pyspark from site-packages, not from Spark's archives.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip``, py4j's source zip and the
``spark-core`` jar first on the ``PYTHONPATH`` of every Python process it starts
(``PythonUtils.sparkPythonPath``). Under a pip-installed pyspark the same modules are
installed, with compiled bytecode, in site-packages; imported from the zip they are
compiled again in every new process (0.5-0.7 s on 2 cores). Spark's planner processes
(data source lookup and creation), the streaming source runner and each Python daemon
are such processes, so every application start paid it several times.

``streamlib-spark-path.pth``, installed next to this module, calls
:func:`strip_spark_archives` at interpreter start when ``PYTHONPATH`` names a
``pyspark.zip``; the archives are dropped only when the installed pyspark is the one
zipped in them, so another ``SPARK_HOME`` (possibly another version) still wins. This
module is top-level and imports nothing beyond the standard library: it runs in every
such process before anything else.

In Spark's own daemon (``python -m pyspark.daemon``: a session streamlib did not make,
whose ``spark.python.daemon.module`` is not :mod:`streamlib.spark.daemon`) the .pth also
calls :func:`preload_in_spark_daemon`, so workers forked from it start with what
streamlib's tasks import, as they do under streamlib's daemon.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys


#: the module of Spark's own Python daemon (``spark.python.daemon.module``'s default)
SPARK_DAEMON = "pyspark.daemon"


def is_spark_archive(path: str) -> bool:
    name = os.path.basename(path)
    return (name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith("-src.zip"))
            or (name.startswith("spark-core_") and name.endswith(".jar")))


def installed_pyspark_matches(archives: list[str]) -> bool:
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
    archives = [p for p in sys.path if is_spark_archive(p)]
    if not archives or not installed_pyspark_matches(archives):
        return False
    sys.path[:] = [p for p in sys.path if p not in archives]
    forget_importers()
    return True


def forget_importers() -> None:
    """Drop the zip importers of Spark's archives from the path importer cache: every
    Python task of Spark starts with ``importlib.invalidate_caches()``, which makes each
    cached zip importer re-read its archive's directory (40-80 ms for the jar)."""
    # The cache is only a cache: a later import builds the importer again, from the
    # zipimport module's own directory cache.
    for path in [p for p, finder in sys.path_importer_cache.items()
                 if type(finder).__name__ == "zipimporter" and any(
                     is_spark_archive(part) for part in _prefixes(p))]:
        del sys.path_importer_cache[path]


def _prefixes(path: str) -> list[str]:
    """``path`` and its parent directories (a zip importer's key may point inside its archive)."""
    found = []
    while path and path not in found:
        found.append(path)
        path = os.path.dirname(path)
    return found


def is_spark_daemon(argv: list[str]) -> bool:
    """Whether ``argv`` (``sys.orig_argv``) starts Spark's own daemon, as Spark does:
    ``<python> -m pyspark.daemon``.

    >>> is_spark_daemon(["python3", "-m", "pyspark.daemon"]), is_spark_daemon(["python3", "-m", "pyspark.worker"])
    (True, False)
    """
    return any(flag == "-m" and module == SPARK_DAEMON for flag, module in zip(argv, argv[1:]))


def preload_in_spark_daemon() -> bool:
    """In Spark's own daemon, import what every streamlib task needs before it forks
    workers (:func:`streamlib.spark.daemon.preload`): each fresh worker would otherwise
    spend 0.7-1.4 s of its first task importing pandas, pyarrow and streamlib, and a
    stage of Python functions starts two workers per core (the read and the functions).
    Returns whether it did."""
    if not is_spark_daemon(getattr(sys, "orig_argv", [])):
        return False
    try:
        from streamlib.spark.daemon import preload

        preload()
    except Exception:   # only a head start: never keep Spark's daemon from starting
        return False
    return True
