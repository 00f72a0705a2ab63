"""One store of one task: its local RocksDB copy, its changelog partition, and the batch
protocol that keeps the two consistent under retries, crashes and lost state.

Bookkeeping kept with the data (committed in the same WriteBatch):
``last_batch`` (the batch the copy reflects), ``changelog_offset`` (the changelog offset
it reflects) and ``undo`` (how to roll back ``last_batch``).
"""
from __future__ import annotations

import logging
import os
import shutil
import time
import uuid
from typing import Callable, Optional

from streamlib.errors import RESET_HINT, ChangelogLost
from streamlib.state.changelog import NO_BATCH, Changelog
from streamlib.state.kv import KeyValueStore
from streamlib.state.metrics import StoreMetrics
from streamlib.state.restore_bar import restore_bar
from streamlib.state.rocksdb import RocksDB, StoreLockTimeout
from streamlib.state.undo import decode_undo, encode_undo

LAST_BATCH = b"last_batch"
CHANGELOG_OFFSET = b"changelog_offset"
#: the changelog's log epoch at ``changelog_offset`` (see streamlib.topics.epochs)
CHANGELOG_EPOCH = b"changelog_epoch"
UNDO = b"undo"
#: ``Changelog.read``'s ``before_batch`` that reads every batch's records
_ALL_BATCHES = 2 ** 62
log = logging.getLogger("streamlib.state")


def _encode_int(value: Optional[int]) -> Optional[bytes]:
    return None if value is None else str(value).encode()


#: a changelog position: the end offset a copy reflects, the log epoch there (None: no
#: epochs) and the last batch the copy reflects (None: none)
Position = tuple[int, Optional[int], Optional[int]]


def _at_or_past(offset: Optional[int], epoch: Optional[int], position: Position) -> bool:
    """Whether a copy at changelog ``offset`` (read under ``epoch``) reflects ``position``
    or a later one (a later epoch is later whatever the offset: a cut tail's offsets are
    handed out again).

    >>> _at_or_past(None, None, (5, 1, 0)), _at_or_past(5, 1, (5, 1, 0)), _at_or_past(3, 2, (5, 1, 0))
    (False, True, True)
    >>> _at_or_past(4, None, (5, None, 0)), _at_or_past(4, 1, (5, 1, 0))
    (False, False)
    """
    if offset is None:
        return False
    if epoch is not None and position[1] is not None and epoch != position[1]:
        return epoch > position[1]
    return offset >= position[0]


def _remove_tree(path: str) -> None:
    """Delete a directory so that a crash midway leaves either the whole copy or nothing
    at ``path`` (rename first, then delete the renamed tree)."""
    if os.path.exists(path):
        doomed = f"{path}.dropped-{uuid.uuid4().hex}"
        os.rename(path, doomed)
        shutil.rmtree(doomed)


class TaskStore:
    """Owns the RocksDB handle; exposes the store to processors as :attr:`kv`."""

    def __init__(self, name: str, path: str, changelog: Optional[Changelog],
                 lock_timeout: float, restore_chunk: int,
                 on_wait: Optional[Callable[[], None]] = None):
        self.name = name
        self.path = path
        self.changelog = changelog
        self._lock_timeout = lock_timeout
        self._restore_chunk = restore_chunk
        self._on_wait = on_wait
        self.metrics = StoreMetrics()
        self._db = self._open()
        self.kv = KeyValueStore(name, self._db, self.metrics)

    def _open(self) -> RocksDB:
        parent = os.path.dirname(self.path)
        if os.path.isdir(parent):   # leftovers of a drop interrupted by a crash
            for entry in os.listdir(parent):
                if entry.startswith(os.path.basename(self.path) + ".dropped-"):
                    shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)
        started = time.perf_counter()
        try:
            db = RocksDB.open(self.path, self._lock_timeout, self._on_wait)
        except StoreLockTimeout:
            raise
        except Exception as exc:
            if _out_of_resources(exc):
                # the process (or disk) is out of something, the copy is not damaged:
                # dropping it would throw state away for nothing, and the reopen fails too
                raise
            # The copy is local, rebuildable state (DESIGN.md): a damaged one is treated
            # like a lost one, rebuilt from its changelog (a store without one, such as
            # the task's local metadata, starts empty, as after a lost state directory).
            source = f"changelog topic {self.changelog.topic}" if self.changelog else "nothing (no changelog)"
            log.warning("store %s: the local copy at %s cannot be opened (%s); restoring it from %s",
                        self.name, self.path, exc, source)
            _remove_tree(self.path)
            self.metrics.dropped_copies += 1
            db = RocksDB.open(self.path, self._lock_timeout, self._on_wait)
        self.metrics.open_seconds += time.perf_counter() - started
        return db

    def _meta_int(self, key: bytes) -> Optional[int]:
        raw = self._db.meta_get(key)
        return None if raw is None else int(raw)

    # -- begin -------------------------------------------------------------------------

    def begin(self, batch_id: int, committed: Optional[Position] = None) -> None:
        """Make the local copy reflect exactly the batches before ``batch_id``;
        ``committed``: the changelog position (offset, epoch) an earlier batch's task
        reached, which the changelog must still hold for a copy restored from it."""
        self.kv._discard_changes()
        last = self._meta_int(LAST_BATCH)
        if last is not None and last >= batch_id:
            rolled_back = last == batch_id and self._undo()
            if not rolled_back:
                self._drop()
        if self.changelog is not None:
            self._catch_up(batch_id, committed=committed)

    def _undo(self) -> bool:
        """Roll back the last committed batch; False if no undo record is available."""
        blob = self._db.meta_get(UNDO)
        if blob is None:
            return False
        undo = decode_undo(blob)
        self._db.write(undo.items, {LAST_BATCH: _encode_int(undo.prev_batch),
                                    CHANGELOG_OFFSET: _encode_int(undo.prev_offset), UNDO: None})
        self.metrics.undone_batches += 1
        return True

    def _drop(self) -> None:
        """Discard the local copy (it is ahead of the batch and cannot be rolled back)."""
        self._db.close()
        _remove_tree(self.path)
        self._db = self._open()
        self.kv._rebind(self._db)
        self.metrics.dropped_copies += 1

    def follow(self, batch_id: int) -> bool:
        """As a standby copy (read only): apply the changelog's records of the batches
        before ``batch_id`` this copy has not seen. Never writes the changelog, never
        undoes: a copy that reflects ``batch_id`` or later is left as it is (False)."""
        self.kv._discard_changes()
        if self.reflects(batch_id):
            return False
        if self.changelog is not None:
            self._catch_up(batch_id, log_again=False)
        return True

    def reflects(self, batch_id: int) -> bool:
        """Whether the copy reflects batch ``batch_id`` or a later one."""
        last = self._meta_int(LAST_BATCH)
        return last is not None and last >= batch_id

    def _catch_up(self, batch_id: int, log_again: bool = True, committed: Optional[Position] = None) -> None:
        """Apply changelog records this copy has not seen, up to the batch being run
        (``log_again``: an exact repair of a changelog that lost this copy's records may
        append to it; a standby's never does; ``committed``: see :meth:`begin`)."""
        offset = self._meta_int(CHANGELOG_OFFSET)
        # A copy that reflects changelog records must find its changelog: a missing one
        # was deleted under the running application, and creating it anew would drop
        # the copy and lose the store's state without a word.
        log_start, log_end = self.changelog.offsets(create=offset is None)
        diverged = None if offset is None else self.changelog.diverged_at(
            offset, self._meta_int(CHANGELOG_EPOCH), log_start, log_end)
        if diverged is not None and diverged == log_end and log_again and self._log_again():
            # The changelog lost records only this copy still reflects, and nothing took
            # their place: log the copy again rather than lose them (an exact repair).
            log.warning("store %s: changelog %s partition %d lost offsets %d to %d, which this copy "
                        "reflects; logged the copy's contents again", self.name, self.changelog.topic,
                        self.changelog.partition, log_end, offset)
            return
        if diverged is not None:
            log.warning("store %s: the local copy reflects changelog %s partition %d up to offset %d, "
                        "which the changelog no longer holds as read (cut tail, re-created topic; it "
                        "diverged at %d): rebuilding the copy from the changelog",
                        self.name, self.changelog.topic, self.changelog.partition, offset, diverged)
            self._drop()
            offset = None
        if committed is not None and not _at_or_past(offset, self._meta_int(CHANGELOG_EPOCH), committed):
            self._check_still_logged(committed, offset, log_start, log_end)
        if offset is None:
            offset = log_start
        started = time.perf_counter()
        last = self._meta_int(LAST_BATCH)
        with restore_bar(log_end - offset, self.name) as bar:
            for chunk in self.changelog.read(offset, log_end, batch_id, self._restore_chunk):
                if not chunk.keys and chunk.resume_offset == offset:
                    break
                meta = {CHANGELOG_OFFSET: _encode_int(chunk.resume_offset),
                        CHANGELOG_EPOCH: _encode_int(self.changelog.epoch_at(chunk.resume_offset))}
                if chunk.keys:
                    last = max(NO_BATCH if last is None else last, chunk.max_batch)
                    meta.update({LAST_BATCH: _encode_int(last), UNDO: None})
                self._db.write(zip(chunk.keys, chunk.values), meta)
                self.metrics.restored_records += len(chunk.keys)
                bar.update(chunk.resume_offset - offset)
                offset = chunk.resume_offset
        self.metrics.restore_seconds += time.perf_counter() - started

    def _check_still_logged(self, committed: Position, offset: Optional[int], log_start: int,
                            log_end: int) -> None:
        """Raise :class:`ChangelogLost` if the changelog lost records up to ``committed``
        (a torn tail cut, a re-created topic) that this copy, reflecting it up to
        ``offset``, cannot log again: a restore would go on without them."""
        offset_then, epoch_then, batch_then = committed
        lost_from = self.changelog.diverged_at(offset_then, epoch_then, log_start, log_end)
        if lost_from is None or (batch_then is not None and self._logged_since(lost_from, log_end, batch_then)):
            return
        app = self.changelog.producer_id.split("/", 1)[0]
        held = "none of it" if offset is None else f"it up to offset {offset} only"
        raise ChangelogLost(
            f"store {self.name!r}: changelog {self.changelog.topic!r} partition {self.changelog.partition} "
            f"no longer holds offsets {lost_from} to {offset_then}, which committed batches wrote, and "
            f"this copy holds {held}: restoring it would lose them silently. Run the application where "
            f"a state directory still holds the store, or reprocess the input: {RESET_HINT.format(app=app)}")

    def _logged_since(self, start: int, end: int, batch: int) -> bool:
        """Whether records of ``batch`` or a later one follow ``start`` in the changelog:
        a copy that held the lost records logged itself again there (as its last batch)."""
        resume = start
        for chunk in self.changelog.read(start, end, batch, self._restore_chunk):
            resume = chunk.resume_offset
        return resume < end

    def _log_again(self) -> bool:
        """Append the copy's whole contents to its changelog as its last batch, with a
        delete of every key the changelog still holds and the copy does not (the lost
        records may have been its delete); compaction drops the rest. False if the
        changelog refused it as a duplicate of that batch."""
        items = list(self._db.scan((None, None)))
        held = {key for key, _ in items}
        gone = [key for key in self._keys_logged() if key not in held]
        last = self._meta_int(LAST_BATCH)
        written, end = self.changelog.append(NO_BATCH if last is None else last,
                                             [k for k, _ in items] + gone,
                                             [v for _, v in items] + [None] * len(gone),
                                             [None] * (len(items) + len(gone)))
        if written:
            self._db.write((), {CHANGELOG_OFFSET: _encode_int(end),
                                CHANGELOG_EPOCH: _encode_int(self.changelog.epoch_at(end))})
        return written

    def _keys_logged(self) -> list[bytes]:
        """The keys whose last record in the changelog is a value (not a delete)."""
        log_start, log_end = self.changelog.offsets(create=False)
        alive: dict[bytes, None] = {}
        for chunk in self.changelog.read(log_start, log_end, _ALL_BATCHES, self._restore_chunk):
            for key, value in zip(chunk.keys, chunk.values):
                if value is None:
                    alive.pop(key, None)
                else:
                    alive[key] = None
        return list(alive)

    # -- commit ------------------------------------------------------------------------

    def commit(self, batch_id: int) -> None:
        """Log, then apply, this batch's final value per changed key (see DESIGN.md)."""
        changes = self.kv._take_changes()
        if not changes.keys:
            return
        started = time.perf_counter()
        prev_batch = self._meta_int(LAST_BATCH)
        offset = self._meta_int(CHANGELOG_OFFSET)
        meta = {LAST_BATCH: _encode_int(batch_id),
                UNDO: encode_undo(prev_batch, offset, changes.keys, changes.prior)}
        if self.changelog is not None:
            written, end = self.changelog.append(batch_id, changes.keys, changes.values,
                                                 changes.timestamps)
            self.metrics.changelog_appends_skipped += not written
            meta[CHANGELOG_OFFSET] = _encode_int(end)
            meta[CHANGELOG_EPOCH] = _encode_int(self.changelog.epoch_at(end))
        self._db.write(zip(changes.keys, changes.values), meta)
        self.metrics.commits += 1
        self.metrics.committed_keys += len(changes.keys)
        self.metrics.commit_seconds += time.perf_counter() - started

    def committed_at(self, ends: dict[tuple[str, int], int]) -> None:
        """The batch's changelog records just became readable with the changelog at
        ``ends[(topic, partition)]`` (a transaction's commit, see
        :meth:`~streamlib.topics.kafka.KafkaBackend.commit_task`): the copy reflects
        the changelog up to there. Until now it kept the end seen inside the open
        transaction, before its own records, which the next batch would read again."""
        end = None if self.changelog is None else ends.get((self.changelog.topic, self.changelog.partition))
        offset = self._meta_int(CHANGELOG_OFFSET)
        if end is not None and (offset is None or end > offset):
            self._db.write((), {CHANGELOG_OFFSET: _encode_int(end),
                                CHANGELOG_EPOCH: _encode_int(self.changelog.epoch_at(end))})

    def changelog_offset(self) -> Optional[int]:
        """The changelog offset the local copy reflects (None: it has read none)."""
        return self._meta_int(CHANGELOG_OFFSET)

    def last_batch(self) -> Optional[int]:
        """The last batch the copy reflects (None: none)."""
        return self._meta_int(LAST_BATCH)

    def changelog_epoch(self) -> Optional[int]:
        """The log epoch at :meth:`changelog_offset` (None: none read, or no epochs)."""
        return self._meta_int(CHANGELOG_EPOCH)

    def flush_in_background(self) -> None:
        """See :meth:`RocksDB.flush_in_background`."""
        self._db.flush_in_background()

    def close(self) -> None:
        self._db.close()


#: RocksDB's words for an open that failed for want of a resource, not a damaged copy
#: (rocksdict raises a plain ``Exception`` with RocksDB's status text).
_RESOURCE_ERRORS = ("Too many open files", "No space left on device", "Cannot allocate memory")


def _out_of_resources(exc: BaseException) -> bool:
    return any(words in str(exc) for words in _RESOURCE_ERRORS)
