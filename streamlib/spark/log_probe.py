"""Before a ``local://`` application starts on a cluster: can every executor see its log?

The embedded log is a directory. On one machine (``local[...]``) or on a path every
executor mounts it works; on a cluster whose executors each have their own disk a task
would find no topics there (or, creating them, count from zero). ``start()`` therefore
probes the directory from the executors with a tiny Spark job before anything is
written, and refuses with one clear error naming the hosts that cannot see it. Once the
executors alive then have seen it, later starts of the same Spark application
(``process_available()`` starts the query every call) probe again only when new executors
joined.
"""
from __future__ import annotations

import os
import socket
import uuid

from streamlib.errors import ConfigurationError
from streamlib.spark import internals

#: (Spark application, log directory) -> the executors that were alive when it was seen
_SEEN: dict[tuple[str, str], frozenset[str]] = {}


def _sees(token: str) -> tuple[str, bool]:
    """On an executor: its host and whether it sees the driver's token file."""
    return socket.gethostname(), os.path.exists(token)


def executor_views(spark, token: str) -> list[tuple[str, bool]]:
    """``(host, sees token)`` from tasks spread over the executors (two per core, so
    that every executor runs some)."""
    sc = spark.sparkContext
    tasks = max(2, 2 * sc.defaultParallelism)
    return sorted(set(sc.parallelize(range(tasks), tasks).map(lambda _: _sees(token)).collect()))


def require_visible_log(spark, root: str) -> None:
    """Raise :class:`~streamlib.errors.ConfigurationError` unless every executor sees the
    local log directory ``root`` (nothing to check on a ``local[...]`` master)."""
    master = spark.sparkContext.master
    if master == "local" or master.startswith("local["):
        return
    seen_by = (spark.sparkContext.applicationId, os.path.abspath(root))
    live = frozenset(internals.known_executors(spark))   # empty: not known, so probe
    if live and live <= _SEEN.get(seen_by, frozenset()):
        return
    token = os.path.join(root, f".executor-probe-{uuid.uuid4().hex}")
    with open(token, "w"):
        pass
    try:
        views = executor_views(spark, token)
    finally:
        os.remove(token)
    blind = sorted({host for host, seen in views if not seen})
    if blind:
        raise ConfigurationError(
            f"the local log directory {root} (bootstrap local://) is not visible on executor "
            f"host(s) {', '.join(blind)}: local:// topics need one machine or a path every executor "
            f"sees (a shared file system); on a cluster use Kafka (bootstrap=\"kafka://host:9092\")")
    if live:
        _SEEN[seen_by] = _SEEN.get(seen_by, frozenset()) | live
