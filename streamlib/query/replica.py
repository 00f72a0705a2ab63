"""Driver-side replicas of an application's stores, kept current from their changelogs.

Interactive queries never read the tasks' own copies: those are locked by running
tasks and may live on other hosts. The driver keeps one RocksDB per store partition
under ``<state_dir>/<application>/_replicas/<store>/<partition>`` (Kafka Streams'
standby replica) and, after each committed micro-batch, reads every changelog
partition up to the end offset that batch's tasks reported, applies it, and only then
*publishes* the batch: queries read the published :class:`Version` and never a
partly applied one.

Readers never block the applier and vice versa (RocksDB snapshots would do this, but
rocksdict 0.3.29 iterates a snapshot's *current* data): before a version's changes are
written, the values they replace are registered on the version they replace
(:attr:`Version.undo`). A reader pinned to version ``V`` reads RocksDB first and then
corrects what it read with the undo records of every version applied after ``V``; a
change written after the read has its undo registered before, so the reader sees it.
"""
from __future__ import annotations

import atexit
import logging
import os
import shutil
import threading
import time
import uuid
from typing import Callable, Iterable, Optional

from streamlib.state.changelog import Changelog
from streamlib.state.rocksdb import RocksDB, db_identity
from streamlib.topics.base import TopicBackend, TopicNotFound

log = logging.getLogger("streamlib.query")

APPLIED_OFFSET = b"changelog_offset"
#: the changelog's log epoch at the applied offset (see streamlib.topics.epochs)
APPLIED_EPOCH = b"changelog_epoch"
#: Changelog records read per ``read_arrow`` call while catching up.
READ_CHUNK = 50_000
#: Records per RocksDB write while a published replica takes a batch's changes:
#: rocksdict holds the GIL for a whole write (and any I/O wait in it), so every other
#: thread of the driver, the query endpoint's among them, waits at most one chunk's
#: write, not a partition's whole batch (see :func:`_write_in_chunks`).
WRITE_CHUNK = 256
#: The following thread runs its idle hooks after this long without a batch.
IDLE_SECONDS = 1.0
#: Directory (under the application's state dir) holding the replicas.
REPLICAS_DIR = "_replicas"

#: (store, partition)
Part = tuple[str, int]
#: {store: {partition: changelog offset}}
Offsets = dict[str, dict[int, int]]


class Version:
    """One published state of every replica: what the application had committed after
    ``batch`` (-1: before any batch this process saw).

    ``undo`` is set (after ``next`` and ``undo_keys``, each partition's undo keys in
    order) once the next version starts being written: per partition, the values at
    this version of the keys the next version changes.
    """

    __slots__ = ("batch", "offsets", "undo", "undo_keys", "next", "__weakref__")

    def __init__(self, batch: int, offsets: Offsets):
        self.batch = batch
        self.offsets = offsets
        self.undo: Optional[dict[Part, dict[bytes, Optional[bytes]]]] = None
        self.undo_keys: dict[Part, list[bytes]] = {}
        self.next: Optional[Version] = None

    def corrections(self, part: Part) -> list[dict[bytes, Optional[bytes]]]:
        """Undo records of ``part`` from this version on, oldest first: the first one
        holding a key has its value at this version."""
        return [undo for _, undo in self.sorted_corrections(part)]

    def sorted_corrections(self, part: Part) -> list[tuple[list[bytes], dict[bytes, Optional[bytes]]]]:
        """:meth:`corrections`, each with its keys in order (a scan of a range looks up
        the keys within it instead of reading every record)."""
        found, version = [], self
        while version.undo is not None:
            undo = version.undo.get(part)
            if undo:
                found.append((version.undo_keys[part], undo))
            version = version.next
        return found


def _remove_tree(path: str) -> None:
    if os.path.exists(path):
        doomed = f"{path}.dropped-{uuid.uuid4().hex}"
        os.rename(path, doomed)
        shutil.rmtree(doomed, ignore_errors=True)


class StoreReplicas:
    """The replicas of one application's logged stores, and the thread that follows
    the committed batches.

    Parameters
    ----------
    root : str
        The application's state directory; replicas live under ``root/_replicas``.
    backend : callable
        Returns the topic backend holding the changelogs.
    changelogs : dict
        Store name -> changelog topic.

    Examples
    --------
    >>> replicas = StoreReplicas.shared(config.application_state_dir, backend_opener,
    ...                                 {"counts": "app-counts-changelog"})  # doctest: +SKIP
    >>> replicas.sync()                      # catch up with everything committed  # doctest: +SKIP
    >>> version, dbs = replicas.pin("counts")                                      # doctest: +SKIP
    """

    _shared: dict[str, "StoreReplicas"] = {}
    _shared_lock = threading.Lock()

    def __init__(self, root: str, backend: Callable[[], TopicBackend], changelogs: dict[str, str]):
        self.root = root
        self.dir = os.path.join(root, REPLICAS_DIR)
        self._backend = backend
        self.changelogs = dict(changelogs)
        self._dbs: dict[str, dict[int, RocksDB]] = {store: {} for store in changelogs}
        self._identity: dict[Part, Optional[bytes]] = {}
        self._published: Optional[Version] = None
        self._targets: Offsets = {}
        self._counts: dict[str, int] = {}    # changelog partitions per store
        self._mutex = threading.RLock()         # one writer at a time (applier, sync, checkpoints)
        self._wake = threading.Condition()
        self._pending: Optional[tuple[int, Offsets]] = None
        self._thread: Optional[threading.Thread] = None
        self._running = False
        self.last_error: Optional[BaseException] = None
        self.applied_versions = 0
        #: called with each new version (under the writer lock) once its changes are
        #: written, just before it is published
        #: (one per name: several ``Streams`` objects may share these replicas)
        self.on_publish: dict[str, Callable[[Version], None]] = {}
        #: called with the published version when no batch came for IDLE_SECONDS
        self.on_idle: dict[str, Callable[[Optional[Version]], None]] = {}

    @classmethod
    def shared(cls, root: str, backend: Callable[[], TopicBackend],
               changelogs: dict[str, str]) -> "StoreReplicas":
        """The process's one replica set for ``root`` (RocksDB allows one opener per
        directory, and several ``Streams`` objects may run the same application one
        after another)."""
        with cls._shared_lock:
            replicas = cls._shared.get(root)
            if replicas is None or replicas.changelogs != changelogs:
                if replicas is not None:
                    replicas.close()
                replicas = cls._shared[root] = cls(root, backend, changelogs)
            return replicas

    # -- reading ---------------------------------------------------------------------------
    def pin(self, store: str) -> tuple[Optional[Version], list[tuple[int, RocksDB]]]:
        """The published version and the store's partition databases to read it from."""
        version = self._published
        dbs = self._dbs.get(store, {})
        return version, sorted(dbs.items())

    @property
    def published(self) -> Optional[Version]:
        return self._published

    # -- catching up -----------------------------------------------------------------------
    def sync(self, before_batch: Optional[int] = None) -> None:
        """Catch up with everything in the changelogs now (nothing may be committing
        meanwhile); records of ``before_batch`` or later (an unfinished batch that will be
        re-run) are left out. Publishes the result."""
        with self._mutex:
            backend = self._backend()
            targets: Offsets = {}
            for store, topic in self.changelogs.items():
                try:
                    targets[store] = backend.end_offsets(topic)
                except TopicNotFound:
                    targets[store] = {}
            last = self._published.batch if self._published is not None else -1
            batch = last if before_batch is None else before_batch - 1
            self._apply(targets, before_batch, batch)

    def committed(self, batch_id: int, offsets: Offsets) -> None:
        """Batch ``batch_id`` committed with these changelog end offsets (partitions whose
        task did not run keep theirs): apply it in the background, then publish it."""
        with self._wake:
            merged = {store: dict(parts) for store, parts in
                      (self._pending[1] if self._pending else self._targets).items()}
            for store, parts in offsets.items():
                if store in self.changelogs:
                    merged.setdefault(store, {}).update(parts)
            self._pending = (batch_id, merged)
            self._wake.notify_all()

    def follow(self) -> None:
        """Start the thread that applies committed batches."""
        with self._wake:
            if self._running:
                return
            self._running = True
            self._thread = threading.Thread(target=self._follow, name="streamlib-replicas",
                                            daemon=True)
            self._thread.start()

    def stop_following(self) -> None:
        """Apply what is pending, then stop the thread."""
        with self._wake:
            self._running = False
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _follow(self) -> None:
        while True:
            with self._wake:
                if self._pending is None and self._running:
                    self._wake.wait(IDLE_SECONDS)
                if self._pending is None:
                    if not self._running:
                        return
                    self.idle()
                    continue
                batch, targets = self._pending
                self._pending = None
            try:
                with self._mutex:
                    self._apply(targets, batch + 1, batch)
            except Exception as exc:  # keep serving the last version; report it
                self.last_error = exc
                log.exception("query replicas failed to apply batch %s", batch)

    def idle(self) -> None:
        """No batch is coming (for a while, or the application stopped): run the ``on_idle``
        hooks (under the writer lock)."""
        with self._mutex:
            for hook in list(self.on_idle.values()):
                try:
                    hook(self._published)
                except Exception:
                    log.exception("query replicas: idle hook failed")

    def _apply(self, targets: Offsets, before_batch: Optional[int], batch: int) -> None:
        """Bring every partition to ``targets`` and publish the result as ``batch``."""
        backend = self._backend()
        self._reopen_if_deleted()
        current = self._published
        deltas: dict[Part, tuple[dict[bytes, Optional[bytes]], int]] = {}
        applied: Offsets = {}
        for store, parts in targets.items():
            try:
                applied[store] = self._catch_up(backend, store, parts, current is None, before_batch, deltas)
            except TopicNotFound:   # deleted (reset): the store is empty until it is recreated
                self._counts.pop(store, None)
                for partition in list(self._dbs[store]):
                    self._drop(store, partition)
                applied[store] = {}
        new = Version(batch, applied)
        if current is not None:
            undo = {part: dict(zip(delta, self._dbs[part[0]][part[1]].get_many(list(delta))))
                    for part, (delta, _, _) in deltas.items()}
            current.undo_keys = {part: sorted(records) for part, records in undo.items()}
            current.next = new      # next and keys before undo: a reader that sees undo can walk on
            current.undo = undo
            for (store, partition), (delta, resume, epoch) in deltas.items():
                _write_in_chunks(self._dbs[store][partition], list(delta.items()), _applied_meta(resume, epoch))
        # Copies for other readers first: Spark SQL never shows an older batch than a
        # view already did.
        for hook in list(self.on_publish.values()):
            try:
                hook(new)
            except Exception:   # a failed copy for Spark must not stop the replicas
                log.exception("query replicas: publish hook failed")
        self._targets = applied
        self._published = new
        self.applied_versions += 1

    def _catch_up(self, backend: TopicBackend, store: str, parts: dict[int, int], direct: bool,
                  before_batch: Optional[int], deltas: dict) -> dict[int, int]:
        """Read ``store``'s changelog partitions up to ``parts``; ``direct``: write as we
        read (nobody reads yet), else collect each partition's delta into ``deltas``.
        Returns the offsets reached."""
        applied = {}
        parts = self._all_partitions(backend, store, parts)
        topic = self.changelogs[store]
        log_starts, log_ends = backend.start_offsets(topic), backend.end_offsets(topic)   # once per store
        for partition, end in sorted(parts.items()):
            db = self._db(store, partition)
            offset = self._applied(db)
            if offset is not None and offset > end:   # the changelog was recreated (reset)
                db = self._drop(store, partition)
                offset = None
            changelog = Changelog(backend, self.changelogs[store], partition, len(parts), "query")
            log_start = log_starts[partition]
            if offset is not None and self._diverged(db, changelog, offset, log_start, log_ends[partition]):
                db = self._drop(store, partition)
                offset = None
            start = offset if offset is not None else log_start
            if direct:
                applied[partition] = self._write_chunks(db, changelog, start, end, before_batch)
                continue
            delta, resume = self._read_delta(changelog, start, end, before_batch)
            applied[partition] = resume
            if delta or resume != start:
                deltas[(store, partition)] = (delta, resume, changelog.epoch_at(resume))
        return applied

    def _all_partitions(self, backend: TopicBackend, store: str, parts: dict[int, int]) -> dict[int, int]:
        """``parts`` plus the changelog's other partitions at their applied offsets (a
        partition no task wrote yet still gets its empty replica: one per task)."""
        if store not in self._counts:
            try:
                self._counts[store] = backend.num_partitions(self.changelogs[store])
            except TopicNotFound:
                self._counts.pop(store, None)
                raise
        previous = self._targets.get(store, {})
        return {p: parts.get(p, previous.get(p, 0)) for p in range(self._counts[store])}

    def _read_delta(self, changelog: Changelog, start: int, end: int,
                    before_batch: Optional[int]) -> tuple[dict[bytes, Optional[bytes]], int]:
        """The last value per key in ``[start, end)`` and where reading stopped."""
        delta: dict[bytes, Optional[bytes]] = {}
        resume = start
        for chunk in changelog.read(start, end, _cut(before_batch), READ_CHUNK):
            delta.update(zip(chunk.keys, chunk.values))
            resume = chunk.resume_offset
        return delta, resume

    def _write_chunks(self, db: RocksDB, changelog: Changelog, start: int, end: int,
                      before_batch: Optional[int]) -> int:
        resume = start
        for chunk in changelog.read(start, end, _cut(before_batch), READ_CHUNK):
            resume = chunk.resume_offset
            db.write(zip(chunk.keys, chunk.values), _applied_meta(resume, changelog.epoch_at(resume)))
        return resume

    # -- the partition databases -------------------------------------------------------------
    def partition_dir(self, store: str, partition: int) -> str:
        return os.path.join(self.dir, store, str(partition))

    def _db(self, store: str, partition: int) -> RocksDB:
        db = self._dbs[store].get(partition)
        if db is None:
            path = self.partition_dir(store, partition)
            db = self._dbs[store][partition] = RocksDB.open(path, lock_timeout=30.0)
            self._identity[(store, partition)] = db_identity(path)
        return db

    @staticmethod
    def _diverged(db: RocksDB, changelog: Changelog, offset: int, log_start: int, log_end: int) -> bool:
        """Whether the changelog no longer holds, as this replica read them, the records
        up to ``offset`` (a cut tail, maybe appended to again; a re-created topic):
        catching up from there would skip what now sits at those offsets."""
        raw = db.meta_get(APPLIED_EPOCH)
        diverged = changelog.diverged_at(offset, None if raw is None else int(raw), log_start, log_end)
        if diverged is not None:
            log.warning("query replica of %s partition %d: the changelog diverged at offset %d from what "
                        "the replica read up to %d; rebuilding it from the changelog",
                        changelog.topic, changelog.partition, diverged, offset)
        return diverged is not None

    @staticmethod
    def _applied(db: RocksDB) -> Optional[int]:
        raw = db.meta_get(APPLIED_OFFSET)
        return None if raw is None else int(raw)

    def _drop(self, store: str, partition: int) -> RocksDB:
        _close_quietly(self._dbs[store].pop(partition))
        _remove_tree(self.partition_dir(store, partition))
        return self._db(store, partition)

    def _reopen_if_deleted(self) -> None:
        """Someone deleted the state directory (``reset``, ``cleanup``): start afresh."""
        for store, dbs in self._dbs.items():
            for partition in list(dbs):
                if db_identity(self.partition_dir(store, partition)) != self._identity[(store, partition)]:
                    _close_quietly(dbs.pop(partition))
                    self._published = None
                    self._counts.pop(store, None)
                    self._targets.pop(store, None)

    # -- frozen copies for Spark ---------------------------------------------------------------
    def checkpoint(self, store: str, into: str) -> list[str]:
        """Hard-linked RocksDB checkpoints of the store's partitions as written now: call
        it under :meth:`writing` or from an ``on_publish`` hook, where that is exactly
        one version. For readers in other processes."""
        from rocksdict import Checkpoint

        with self._mutex:
            os.makedirs(into, exist_ok=True)
            paths = []
            for partition, db in sorted(self._dbs.get(store, {}).items()):
                path = os.path.join(into, str(partition))
                Checkpoint(db._db).create_checkpoint(path)
                paths.append(path)
            return paths

    def writing(self) -> threading.RLock:
        """The writer lock: while held, the databases hold exactly the published version."""
        return self._mutex

    def close(self) -> None:
        """Stop following and close every database."""
        self.stop_following()
        with self._mutex:
            for dbs in self._dbs.values():
                for db in dbs.values():
                    _close_quietly(db)
                dbs.clear()
            self._published = None
        with self._shared_lock:
            if self._shared.get(self.root) is self:
                del self._shared[self.root]

    @classmethod
    def close_shared(cls) -> None:
        """Close the process's replica sets: at interpreter exit, so that their follower
        threads stop before the databases close (``Streams.stop`` keeps them open, for
        queries after the stop and for the next ``Streams`` of the same application)."""
        with cls._shared_lock:
            sets = list(cls._shared.values())
        for replicas in sets:
            try:
                replicas.close()
            except Exception as exc:  # noqa: BLE001 - exiting: close the others anyway
                log.warning("closing the query replicas under %s at exit failed: %s", replicas.root, exc)


atexit.register(StoreReplicas.close_shared)


def _close_quietly(db: RocksDB) -> None:
    """Close a database whose files someone deleted (closing flushes, which then fails)."""
    try:
        db.close()
    except Exception as exc:
        log.debug("closing a deleted replica %s: %s", db.path, exc)


def _write_in_chunks(db: RocksDB, items: list, meta: dict[bytes, Optional[bytes]]) -> None:
    """``items`` in writes of :data:`WRITE_CHUNK`, the GIL let go between them; ``meta``
    (the applied offset) with the last, so a crash half-way re-applies the batch from
    the changelog. Readers are unaffected: the values these replace are in the undo
    records already, and the version is published after the last write."""
    for start in range(0, max(len(items), 1), WRITE_CHUNK):
        last = start + WRITE_CHUNK >= len(items)
        db.write(items[start:start + WRITE_CHUNK], meta if last else {})
        if not last:
            time.sleep(0)   # a thread waiting for the GIL takes it now, not a switch interval later


def _applied_meta(offset: int, epoch: Optional[int]) -> dict[bytes, Optional[bytes]]:
    return {APPLIED_OFFSET: str(offset).encode(), APPLIED_EPOCH: None if epoch is None else str(epoch).encode()}


def _cut(before_batch: Optional[int]) -> int:
    return (1 << 62) if before_batch is None else before_batch


def merge_offsets(reports: Iterable[tuple[str, dict]]) -> Offsets:
    """Changelog end offsets per store and partition from task metrics
    (``task_id`` ``"<sub>_<partition>"`` -> ``{"changelog_offsets": {store: offset}}``)."""
    offsets: Offsets = {}
    for task_id, metrics in reports:
        logged = metrics.get("changelog_offsets")
        if not logged:   # a stateless task, or the undecodable-rows task of a Column source
            continue
        partition = int(task_id.rsplit("_", 1)[1])
        for store, offset in logged.items():
            offsets.setdefault(store, {})[partition] = int(offset)
    return offsets
