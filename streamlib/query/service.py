"""Interactive queries of one application: store views, table copies, the HTTP endpoint.

``Streams`` owns one :class:`Queries` and calls it at the lifecycle points: before the
query starts (:meth:`starting`), after every committed batch (:meth:`committed`) and
after it stopped (:meth:`stopped`).
"""
from __future__ import annotations

import glob
import os
import threading
import time
from typing import Any, Callable, Optional

from streamlib.config import StreamsConfig
from streamlib.processors.stores import query_view
from streamlib.runtime.batches import data_pass
from streamlib.query import frozen
from streamlib.query.metrics import ApplicationMetrics
from streamlib.query.reads import ReplicaReads
from streamlib.query.replica import StoreReplicas, merge_offsets
from streamlib.state.global_replica import GLOBAL_DIR
from streamlib.state.partitioned import PartitionedReadOnlyStore
from streamlib.state.reads import KeyValueReads
from streamlib.topology import StoreDef, Topology

#: While the application is idle, reads catch up with the changelogs at most this often
#: (another process may be running the application).
IDLE_SYNC_SECONDS = 0.2


def _view_for(d: StoreDef, reads: KeyValueReads, config: StreamsConfig) -> Any:
    """The typed view of store ``d`` (key-value, window or session)."""
    return query_view(d, reads, config)


def custom_partitioned(topology: Topology, store: str) -> bool:
    """Whether a custom partitioner (``Produced.partitioner``) writes a topic the
    sub-topology of ``store`` reads: then a key's partition cannot be known from its bytes."""
    subs = [s for s in topology.subtopologies if store in s.stores]
    inputs = {t for s in subs for t in s.input_topics}
    return any(getattr(node.params, "partitioner", None) is not None and node.params.topic in inputs
               for node in topology.nodes.values() if node.spec.sink)


def last_committed_batch(checkpoint: str) -> Optional[int]:
    """The newest batch Spark's checkpoint records as committed (None: none yet)."""
    try:
        names = os.listdir(os.path.join(checkpoint, "commits"))
    except FileNotFoundError:
        return None
    batches = [int(n) for n in names if n.isdigit()]
    return max(batches) if batches else None


class Queries:
    """Views, tables and the HTTP endpoint of one application.

    Parameters
    ----------
    topology, config
        The application.
    backend : callable
        Opens the application's topic backend (where the changelogs are).
    """

    def __init__(self, topology: Topology, config: StreamsConfig, backend: Callable[[], Any]):
        self.topology = topology
        self.config = config
        self._following = False
        self._last_idle_sync = 0.0
        self._sync_lock = threading.Lock()
        self._views: dict[str, Any] = {}
        #: store -> (directory, batch, when made) of its newest frozen copy
        self._frozen: dict[str, tuple[str, int, float]] = {}
        self._secondary: dict[str, PartitionedReadOnlyStore] = {}
        logged = {name: config.changelog_topic(name) for name, d in topology.stores.items() if d.logging}
        self.replicas = StoreReplicas.shared(config.application_state_dir, backend, logged)
        self.server = None
        #: what ``GET /metrics`` serves (Prometheus)
        self.metrics = ApplicationMetrics(config.application_id)

    # -- lifecycle ------------------------------------------------------------------------
    def starting(self, metrics: Callable[[], dict]) -> None:
        """Before the query starts: catch up with what is committed, follow batches,
        start the HTTP endpoint if configured."""
        self._sync()
        self._following = True
        self.replicas.follow()
        self.metrics.follow(metrics)
        if self.config.application_server and self.server is None:
            from streamlib.query.http import QueryServer

            self.server = QueryServer(self, self.metrics)
            self.server.start()

    def pass_ran(self, task_reports: dict[str, dict]) -> None:
        """One pass of a batch ran (its tasks' reports): counted per task for ``/metrics``."""
        self.metrics.pass_ran(task_reports)

    def committed(self, batch_id: int, task_reports: dict[str, dict], seconds: Optional[float] = None) -> None:
        """A batch committed (in ``seconds``): publish it once its changelog records are applied."""
        if seconds is not None:
            self.metrics.batch_duration.observe(seconds)
        self.replicas.committed(batch_id, merge_offsets(task_reports.items()))

    def stopped(self) -> None:
        """After the query stopped: apply what is pending, catch up, stop the endpoint."""
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self._following:
            self.replicas.stop_following()
            self._following = False
            self._sync()

    def close(self) -> None:
        self.stopped()
        self.replicas.close()
        for store in self._secondary.values():
            store.close()
        self._secondary.clear()

    def _sync(self) -> None:
        with self._sync_lock:
            last = last_committed_batch(self.config.resolved_checkpoint_location())
            # changelog records carry internal batch ids (streamlib.runtime.batches)
            self.replicas.sync(None if last is None else data_pass(last + 1))
            self.replicas.idle()   # nothing is being committed: copies catch up at once
            self._last_idle_sync = time.monotonic()

    def _prepare(self) -> None:
        """Before a read: when nothing follows the batches, catch up now and then."""
        if not self._following and time.monotonic() - self._last_idle_sync > IDLE_SYNC_SECONDS:
            self._sync()

    # -- views ----------------------------------------------------------------------------
    def store_def(self, name: str) -> StoreDef:
        if name not in self.topology.stores:
            raise KeyError(f"no store named {name!r}; stores: {sorted(self.topology.stores)}")
        return self.topology.stores[name]

    def store(self, name: str) -> Any:
        """The typed read-only view of store ``name`` (see ``Streams.store``)."""
        d = self.store_def(name)
        if name not in self._views:
            self._views[name] = _view_for(d, self.reads(name), self.config)
        return self._views[name]

    def reads(self, name: str) -> KeyValueReads:
        """Byte reads of store ``name``: its replica, or for a store without a changelog
        its task copies (opened as RocksDB secondaries)."""
        d = self.store_def(name)
        if d.logging:
            return ReplicaReads(self.replicas, name, self._prepare, probe=not custom_partitioned(self.topology, name))
        if name not in self._secondary:
            self._secondary[name] = PartitionedReadOnlyStore(lambda: self._task_copies(name))
        return self._secondary[name]

    def _task_copies(self, name: str) -> list[str]:
        root = self.config.application_state_dir
        if self.topology.stores[name].global_topic:   # every task's replica is complete: one
            return sorted(glob.glob(os.path.join(root, "*", GLOBAL_DIR, name)))[:1]
        sub = next(s for s in self.topology.subtopologies if name in s.stores)
        return sorted(glob.glob(os.path.join(root, f"{sub.id}_*", name)))

    # -- tables ---------------------------------------------------------------------------
    def table(self, name: str, register: Callable[[frozen.FrozenCopy], Any]) -> Any:
        """``register(copy)`` for a frozen copy of the store's published version now, and
        again for newer versions: at most every ``frozen.MIN_INTERVAL_SECONDS`` while
        batches keep coming, and for the newest once they pause (or the application
        stops); returns what the first call returned."""
        d = self.store_def(name)
        if not d.logging:   # no replica: the task copies, live, read as secondaries
            return register(frozen.FrozenCopy(-1, tuple(self._task_copies(name)), secondary=True))
        self._prepare()

        def refresh(version: Any, force: bool = False) -> None:
            frozen_at = self._frozen.get(name)
            if version is None or (frozen_at is not None and frozen_at[1] == version.batch):
                return
            if force or frozen_at is None or time.monotonic() - frozen_at[2] >= frozen.MIN_INTERVAL_SECONDS:
                register(self._freeze(name, version))

        with self.replicas.writing():
            result = register(self._freeze(name, self.replicas.published))
            self.replicas.on_publish[f"table:{name}"] = refresh
            self.replicas.on_idle[f"table:{name}"] = lambda version: refresh(version, force=True)
        return result

    def _freeze(self, name: str, version: Any) -> frozen.FrozenCopy:
        """Checkpoint ``name`` as its databases hold it now (``version``)."""
        store_dir = os.path.join(self.replicas.dir, name)
        batch = version.batch if version is not None else -1
        target = frozen.new_version_dir(store_dir, batch)
        paths = self.replicas.checkpoint(name, target)
        if name in self._frozen:
            frozen.supersede(self._frozen[name][0])
        self._frozen[name] = (target, batch, time.monotonic())
        frozen.collect_garbage(store_dir, keep=target)
        return frozen.FrozenCopy(batch, tuple(paths))
