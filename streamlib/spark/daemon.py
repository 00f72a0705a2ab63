"""Spark's Python workers without pyspark's source zip on ``sys.path``.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on every Python worker's
``PYTHONPATH``. Under a pip-installed pyspark the same modules are installed, with
compiled bytecode, in site-packages; imported from the zip they are compiled again in
every new worker, and every task's ``importlib.invalidate_caches()`` re-reads the zip's
directory (thousands of entries). This daemon drops the zips when the installed pyspark
is the same version, then runs Spark's own daemon, so forked workers import pyspark
from compiled files. Selected by ``spark.python.daemon.module`` (set by
:func:`streamlib.spark.session.get_or_create_session`). In a session made otherwise,
:func:`forget_source_zips`, called by streamlib's task functions, still spares every
later task of the worker the re-reading.
"""
from __future__ import annotations

import importlib.util
import os
import sys


def _installed_pyspark_dir(zip_entries: list[str]) -> str | None:
    """Directory of a pyspark installed outside the zips, if it matches the zipped version."""
    rest = [p for p in sys.path if p not in zip_entries]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", rest)
    if spec is None or not spec.submodule_search_locations:
        return None
    installed = list(spec.submodule_search_locations)[0]
    zipped = next((p for p in zip_entries if os.path.basename(p) == "pyspark.zip"), None)
    if zipped is None:
        return None
    # The zip sits at <spark home>/python/lib/pyspark.zip; a pip install keeps it
    # inside the installed package itself. Anything else may be another version.
    if os.path.realpath(zipped).startswith(os.path.realpath(installed) + os.sep):
        return installed
    return None


def _source_zips() -> list[str]:
    return [p for p in sys.path if os.path.basename(p) == "pyspark.zip"
            or (os.path.basename(p).startswith("py4j-") and p.endswith("-src.zip"))]


def strip_source_zips() -> bool:
    """Remove pyspark's and py4j's zips from ``sys.path`` when pyspark is installed.

    Returns whether they were removed.
    """
    zips = _source_zips()
    if not zips or _installed_pyspark_dir(zips) is None:
        return False
    sys.path[:] = [p for p in sys.path if p not in zips]
    for entry in zips:
        sys.path_importer_cache.pop(entry, None)
    return True


def forget_source_zips() -> None:
    """In a worker that already imported pyspark from its zip: drop the zips from
    ``sys.path`` (pyspark's packages keep their own paths) and the zip importers from
    the path importer cache, whose every entry Spark's next task would re-read.

    Cheap when there is nothing to drop, so task functions call it every time.
    """
    zips = _source_zips()
    if zips and _installed_pyspark_dir(zips) is not None:
        sys.path[:] = [p for p in sys.path if p not in zips]
    cached = [path for path, finder in sys.path_importer_cache.items()
              if type(finder).__name__ == "zipimporter" and ".zip" in path
              and ("pyspark.zip" in path or "py4j-" in path)]
    for path in cached:
        del sys.path_importer_cache[path]


if __name__ == "__main__":
    strip_source_zips()
    from pyspark import daemon

    daemon.manager()
