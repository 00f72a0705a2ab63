"""In the Python processes Spark starts for streamlib's sessions, pyspark comes from
site-packages, not from Spark's archives.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip``, py4j's source zip and the
``spark-core`` jar first on the ``PYTHONPATH`` of every Python process it starts
(``PythonUtils.sparkPythonPath``). Under a pip-installed pyspark the same modules are
installed, with compiled bytecode, in site-packages; imported from the zip they are
compiled again in every new process (0.5-0.7 s on 2 cores, 3-4 s under load).
Spark's planner processes (data source creation and read planning) and the streaming
source runner of every query are such processes, and no Spark setting chooses their
module, so only code that runs at interpreter start can spare them that.

``streamlib-spark-path.pth``, installed next to this module, calls
:func:`start_marked_process` at interpreter start only when :data:`SESSION_VARIABLE`
is in the environment: sessions streamlib creates or configures set it for the
processes Spark starts for them (``spark.executorEnv.STREAMLIB_SPARK_SESSION``, see
:mod:`streamlib.spark.session`); any other process, another application's Spark
workers included, is left as it is. The archives are dropped only when the installed
pyspark is the one zipped in them, so another ``SPARK_HOME`` (possibly another
version) still wins. This module is top-level and imports nothing beyond the standard
library (streamlib only in the daemon of a marked session): it runs before anything else
in those processes.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys


#: Set (to ``1``) in the environment of the Python processes Spark starts for a session
#: streamlib creates or configures; the .pth acts only where it is set.
SESSION_VARIABLE = "STREAMLIB_SPARK_SESSION"


def in_streamlib_session() -> bool:
    """Whether this process was started by Spark for a session streamlib made or configured."""
    return SESSION_VARIABLE in os.environ


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


#: the module of Spark's own Python daemon (``spark.python.daemon.module``'s default)
SPARK_DAEMON = "pyspark.daemon"


def is_spark_daemon(argv: list[str]) -> bool:
    """Whether ``argv`` (``sys.orig_argv``) starts Spark's own daemon, as Spark does:
    ``<python> -m pyspark.daemon``.

    >>> is_spark_daemon(["python3", "-m", "pyspark.daemon"]), is_spark_daemon(["python3", "-m", "pyspark.worker"])
    (True, False)
    """
    return any(flag == "-m" and module == SPARK_DAEMON for flag, module in zip(argv, argv[1:]))


def start_marked_process() -> None:
    """What the .pth does in a process Spark started for a session streamlib made or
    was handed (:data:`SESSION_VARIABLE` set): drop Spark's archives and, in Spark's
    own daemon, import what streamlib's tasks need before it forks workers.

    A session the user made and handed to streamlib keeps Spark's daemon module, so
    the workers of streamlib's functions there would each import pandas, pyarrow and
    streamlib in their first task (about a second per one-batch query on 2 cores);
    that daemon serves only functions made after the session was handed over, whose
    environment carries the variable. Sessions streamlib creates preload in their own
    daemon (:mod:`streamlib.spark.daemon`)."""
    strip_spark_archives()
    if not is_spark_daemon(getattr(sys, "orig_argv", [])):
        return
    try:
        from streamlib.spark.daemon import preload

        preload()
    except Exception:   # noqa: BLE001 - only a head start: never keep the daemon from starting
        pass

