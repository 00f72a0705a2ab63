"""All stores of one task (sub-topology × partition), opened, begun and committed together.

The runtime opens a task's stores for a batch, calls :meth:`TaskStores.begin`, runs the
processors, :meth:`TaskStores.commit` and :meth:`TaskStores.close`. Task-level values
(e.g. stream time) live in an internal store so they commit, roll back and restore by
the same protocol as the data.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

from streamlib.state.changelog import Changelog
from streamlib.state.kv import KeyValueStore
from streamlib.state.metrics import StoreMetrics
from streamlib.state.store import Position, TaskStore
from streamlib.topics.base import TopicBackend

META_STORE = "__task_meta"
#: File an opener keeps creating in the task directory while another process holds the
#: stores' LOCK: a holder that keeps them open between batches closes them when it
#: sees it (streamlib.state.cache).
RELEASE_REQUEST = ".release-request"


def ask_to_release(task_dir: str) -> None:
    """Ask whichever process keeps ``task_dir``'s stores open between batches to close
    them (:data:`RELEASE_REQUEST`); nothing to ask where the directory does not exist."""
    try:
        with open(os.path.join(task_dir, RELEASE_REQUEST), "a"):
            pass
    except FileNotFoundError:
        pass


def withdraw_release_request(task_dir: str) -> None:
    """Remove ``task_dir``'s :data:`RELEASE_REQUEST`, if there is one."""
    try:
        os.remove(os.path.join(task_dir, RELEASE_REQUEST))
    except FileNotFoundError:
        pass


_SUMMED = ("gets", "puts", "open_seconds", "commits", "committed_keys", "commit_seconds",
           "restored_records", "restore_seconds", "entries")


@dataclass(frozen=True)
class StoreSpec:
    """What a task needs to know about one store (plain and picklable)."""

    name: str
    changelog_topic: Optional[str] = None
    logging: bool = True
    #: byte-store entries one user record takes (a window, session or version: its data
    #: and its time-index entry), so :meth:`TaskStores.metrics` counts user records
    entries_per_record: int = 1
    #: the configs its changelog topic is created with (if a task creates it)
    changelog_config: Optional[dict] = None

    def __post_init__(self):
        if not self.name or self.name.startswith("__") or "/" in self.name:
            raise ValueError(f"invalid store name {self.name!r}")
        if self.entries_per_record < 1:
            raise ValueError(f"store {self.name!r}: entries_per_record must be >= 1")
        if self.logging and not self.changelog_topic:
            raise ValueError(f"store {self.name!r} logs changes but names no changelog_topic")


class TaskStores(Mapping[str, KeyValueStore]):
    """A mapping store name -> :class:`KeyValueStore`, plus the batch lifecycle."""

    def __init__(self, stores: dict[str, TaskStore], meta: TaskStore,
                 entries_per_record: Optional[dict[str, int]] = None):
        self._stores = stores
        self._meta = meta
        self._per_record = entries_per_record or {}
        self._batch: Optional[int] = None

    def _all(self) -> list[TaskStore]:
        return [*self._stores.values(), self._meta]

    def begin(self, batch_id: int, committed: Optional[Mapping[str, Position]] = None) -> None:
        """Make every store reflect exactly the batches before ``batch_id``: roll back a
        locally committed attempt of it, drop a copy that is ahead, catch up from the
        changelogs. ``committed``: per store, the changelog position an earlier batch
        reached (:meth:`changelog_positions`), which a restore must find still logged."""
        committed = committed or {}
        for store in self._all():
            store.begin(batch_id, committed.get(store.name))
        self._batch = batch_id

    def follow(self, batch_id: int) -> bool:
        """As a standby copy: catch every store up from its changelog to the batches
        before ``batch_id``, writing no changelog (:meth:`TaskStore.follow`); False if
        one of them already reflects ``batch_id`` or later (an active copy: left alone)."""
        if any(store.reflects(batch_id) for store in self._all()):
            return False
        for store in self._all():
            store.follow(batch_id)
        return True

    def __getitem__(self, name: str) -> KeyValueStore:
        try:
            return self._stores[name].kv
        except KeyError:
            raise KeyError(f"unknown store {name!r}; this task has {sorted(self._stores)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._stores)

    def __len__(self) -> int:
        return len(self._stores)

    def meta_get(self, name: str) -> Optional[bytes]:
        return self._meta.kv.get(name.encode())

    def meta_items(self) -> dict[str, bytes]:
        """Every task-level value (there are few: stream time, per-processor times)."""
        return {key.decode(): value for key, value in self._meta.kv.all()}

    def meta_put(self, name: str, value: Optional[bytes]) -> None:
        """Set a task-level value, committed with the batch (``None`` removes it)."""
        self._meta.kv.put(name.encode(), value)

    def commit(self) -> None:
        """End the batch: each store appends to its changelog, then writes one WriteBatch."""
        if self._batch is None:
            raise RuntimeError("TaskStores.commit() without begin(batch_id)")
        for store in self._all():
            store.commit(self._batch)
        self._batch = None

    def committed_at(self, ends: dict[tuple[str, int], int]) -> None:
        """The batch's changelog writes are readable, the changelogs at ``ends`` per
        ``(topic, partition)``: see :meth:`TaskStore.committed_at`."""
        for store in self._all():
            store.committed_at(ends)

    def paths(self) -> list[str]:
        """The directories of the task's databases (data stores, then task metadata)."""
        return [store.path for store in self._all()]

    def reset_metrics(self) -> None:
        """Zero every store's counters (a copy kept open reports per batch, as a fresh one)."""
        fresh = StoreMetrics()
        for store in self._all():
            for name, value in fresh.as_dict().items():
                setattr(store.metrics, name, value)

    def flush_in_background(self) -> None:
        """Let every store write its memtables to disk in the background (committed
        batches only: it changes nothing a reader sees), so closing them later is quick."""
        for store in self._all():
            store.flush_in_background()

    def close(self) -> None:
        """Release the RocksDB locks; uncommitted writes are discarded. Every store is
        closed even when one fails (a deleted directory makes RocksDB's close fail):
        the first error is raised after."""
        error: Optional[Exception] = None
        for store in self._all():
            try:
                store.close()
            except Exception as exc:  # noqa: BLE001 - the other stores' LOCKs first
                error = error or exc
        if error is not None:
            raise error

    def __enter__(self) -> TaskStores:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def changelog_offsets(self) -> dict[str, int]:
        """Per logged store: the changelog end offset its copy reflects after the batch
        (what the driver's query replicas read up to, see :mod:`streamlib.query`)."""
        offsets = {}
        for name, store in self._stores.items():
            offset = store.changelog_offset() if store.changelog is not None else None
            if offset is not None:
                offsets[name] = offset
        return offsets

    def changelog_positions(self) -> dict[str, Position]:
        """Per logged store (task metadata included): the changelog offset its copy
        reflects, the log epoch there and the last batch it reflects, what a later
        restore must find still logged (:data:`~streamlib.state.store.Position`)."""
        positions = {}
        for store in self._all():
            offset = store.changelog_offset() if store.changelog is not None else None
            if offset is not None:
                positions[store.name] = (offset, store.changelog_epoch(), store.last_batch())
        return positions

    def metrics(self) -> dict:
        """Totals over the task's stores plus ``stores``: name -> that store's counters.
        ``entries`` is about the number of user records (windows, sessions, key-values),
        not of byte-store entries: a window store's time index is not counted."""
        per_store = {store.name: {**store.metrics.as_dict(),
                                  "entries": store.kv.approximate_num_entries()
                                  // self._per_record.get(store.name, 1)}
                     for store in self._all()}
        totals = {key: sum(m[key] for m in per_store.values()) for key in _SUMMED}
        return {**totals, "stores": per_store}


def open_task_stores(task_dir: str | os.PathLike, specs: Sequence[StoreSpec],
                     backend: Optional[TopicBackend] = None, partition: int = 0,
                     num_partitions: int = 1, producer_prefix: str = "streamlib",
                     meta_changelog_topic: Optional[str] = None, lock_timeout: float = 30.0,
                     restore_chunk: int = 10_000, create_changelogs: bool = True) -> TaskStores:
    """Open one RocksDB per store under ``task_dir/<store>``, waiting up to
    ``lock_timeout`` s for a previous holder (meanwhile asking it to release them, see
    :data:`RELEASE_REQUEST`). Stores log to their changelog topic's ``partition`` when
    ``backend`` is given; task metadata is logged to ``meta_changelog_topic`` if given
    (otherwise it is local only). With ``create_changelogs=False`` (Spark tasks: the
    driver creates every changelog before a task runs) a missing changelog is an error."""
    task_dir = os.fspath(task_dir)

    def ask_holder_to_release() -> None:
        # Re-created at every retry: another waiter that got the stores first removes it.
        ask_to_release(task_dir)

    configs = {spec.name: spec.changelog_config for spec in specs}

    def changelog(store: str, topic: Optional[str]) -> Optional[Changelog]:
        if backend is None or topic is None:
            return None
        return Changelog(backend, topic, partition, num_partitions,
                         f"{producer_prefix}/{store}/{partition}", configs.get(store),
                         may_create=create_changelogs)

    wanted = [(spec.name, spec.changelog_topic if spec.logging else None) for spec in specs]
    wanted.append((META_STORE, meta_changelog_topic))
    opened: list[TaskStore] = []
    try:
        for name, topic in wanted:
            opened.append(TaskStore(name, os.path.join(task_dir, name), changelog(name, topic),
                                    lock_timeout, restore_chunk, ask_holder_to_release))
    except BaseException:
        for store in opened:
            store.close()
        raise
    finally:
        # also a request made before this open (StoreCache.request_release): it is
        # answered once the stores are here, or it goes with the failed opener
        withdraw_release_request(task_dir)
    *stores, meta = opened
    return TaskStores({store.name: store for store in stores}, meta,
                      {spec.name: spec.entries_per_record for spec in specs})
