"""Before a ``local://`` application starts on a cluster: can every executor see its log?

The embedded log is a directory. On one machine (``local[...]``) or on a path every
executor mounts it works; on a cluster whose executors each have their own disk a task
would find no topics there (or, creating them, count from zero). ``start()`` therefore
probes the directory from the executors with a tiny Spark job before anything is
written, and refuses with one clear error naming the hosts that cannot see it.
"""
from __future__ import annotations

import os
import socket
import uuid

from streamlib.errors import ConfigurationError


def _sees(token: str) -> tuple[str, bool]:
    """On an executor: its host and whether it sees the driver's token file."""
    return socket.gethostname(), os.path.exists(token)


def executor_views(spark, token: str) -> list[tuple[str, bool]]:
    """``(host, sees token)`` from tasks spread over the executors (two per core, so
    that every executor runs some)."""
    sc = spark.sparkContext
    tasks = max(2, 2 * sc.defaultParallelism)
    return sc.parallelize(range(tasks), tasks).map(lambda _: _sees(token)).distinct().collect()


def require_visible_log(spark, root: str) -> None:
    """Raise :class:`~streamlib.errors.ConfigurationError` unless every executor sees the
    local log directory ``root`` (nothing to check on a ``local[...]`` master)."""
    if spark.sparkContext.master.startswith("local["):
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
