"""Log epochs of a local partition: Kafka's leader epochs (KIP-320) for the embedded log.

An offset alone does not say which record it names once a log has lost its tail: a
repair that cuts a torn tail (a crash mid-append, a disk that lost unsynced or
damaged data) makes the next appends reuse the cut offsets, and a re-created topic
starts again at 0. So each partition keeps an epoch history, ``epochs.json`` beside
its segments: ``[[epoch, first offset], ...]``, a new epoch whenever offsets may be
handed out a second time. A reader keeps, with each offset it has read up to, the
epoch of the last record before it (:func:`epoch_of_end`), and before going on asks
:func:`diverged_at` whether the log still holds what it read.

Epochs of a topic created with this module start at ``creation time in ms << 20``, so
a re-created topic's epochs lie above every epoch of the topic it replaces; a
partition written before epochs existed has the implicit history ``[[0, 0]]``.
"""
from __future__ import annotations

import json
import os
import threading
import time
from typing import Optional

from .base import TopicsError
from .fsyncs import fsync_path

EPOCHS_FILE = "epochs.json"
#: The history of a partition that has no epochs file (written before epochs existed).
IMPLICIT_HISTORY = ((0, 0),)

History = tuple[tuple[int, int], ...]


class EpochUnknown(TopicsError):
    """A reader's epoch is newer than every epoch of the log: it read another log."""


_last_first_epoch = 0
_first_epoch_lock = threading.Lock()


def first_epoch(now_ms: Optional[int] = None) -> int:
    """The first epoch of a topic created now (above every epoch of an older topic).

    Strictly increasing within a process: a topic deleted and created again in the
    same millisecond still starts above the one it replaces.
    """
    global _last_first_epoch
    with _first_epoch_lock:
        epoch = max((int(time.time() * 1000) if now_ms is None else now_ms) << 20,
                    _last_first_epoch + (1 << 20))
        _last_first_epoch = epoch
        return epoch


def read_history(directory: str) -> History:
    """The partition's epoch history, oldest first."""
    try:
        with open(os.path.join(directory, EPOCHS_FILE)) as f:
            entries = json.load(f)["epochs"]
    except FileNotFoundError:
        return IMPLICIT_HISTORY
    except (ValueError, KeyError, TypeError) as exc:
        raise TopicsError(f"{os.path.join(directory, EPOCHS_FILE)} is damaged ({exc}); the partition's "
                          f"epochs cannot be checked") from None
    return tuple((int(e), int(s)) for e, s in entries)


def write_history(directory: str, history: History, fsync: bool = True) -> None:
    """Replace the history atomically (durably with ``fsync``: a bump must outlive a
    crash before the offsets it covers are handed out again)."""
    tmp = os.path.join(directory, EPOCHS_FILE + ".tmp")
    with open(tmp, "w") as f:
        json.dump({"epochs": [list(entry) for entry in history]}, f)
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, os.path.join(directory, EPOCHS_FILE))
    if fsync:
        fsync_path(directory, os.O_RDONLY | os.O_DIRECTORY)


def bumped(history: History, start: int) -> History:
    """``history`` with a new epoch from offset ``start`` on.

    >>> bumped(((5, 0),), 900)
    ((5, 0), (6, 900))
    """
    return history + ((history[-1][0] + 1, start),)


def epoch_of_end(history: History, end: int) -> int:
    """The epoch under which a reader that has read up to ``end`` (exclusive) read:
    that of the record at ``end - 1`` (the first epoch if nothing was read).

    >>> epoch_of_end(((5, 0), (6, 900)), 900), epoch_of_end(((5, 0), (6, 900)), 901)
    (5, 6)
    """
    epoch = history[0][0]
    for e, start in history:
        if start <= end - 1:
            epoch = e
    return epoch


def diverged_at(history: History, log_start: int, log_end: int, epoch: int, offset: int) -> Optional[int]:
    """Where a reader that read up to ``offset`` under ``epoch`` must read again, or
    ``None`` if the log still holds what it read (KIP-320's OffsetsForLeaderEpoch).

    The records of ``epoch`` end where the next epoch starts (or at the log end): a
    reader past that point read records that were cut, and the offsets from there
    on name new records, to be read from there. A reader of an older topic (its
    epoch below all of this log's) goes back to the log start. An epoch above all
    of this log's raises :class:`EpochUnknown`: nothing says where it diverged.

    >>> history = ((5, 0), (6, 900))      # 1000 records read under 5; the tail was cut at 900
    >>> diverged_at(history, 0, 4900, 5, 1000), diverged_at(history, 0, 4900, 6, 1000)
    (900, None)
    >>> diverged_at(history, 0, 4900, 5, 900), diverged_at(history, 0, 4900, 1, 70)
    (None, 0)
    >>> diverged_at(((5, 0),), 0, 800, 5, 1000)   # lost its tail, no new epoch yet
    800
    """
    if epoch > history[-1][0]:
        raise EpochUnknown(f"epoch {epoch} is newer than the log's last epoch {history[-1][0]}")
    later = [start for e, start in history if e > epoch]
    if len(later) == len(history):
        return log_start  # read from a topic this one replaced
    epoch_end = later[0] if later else log_end
    return epoch_end if offset > epoch_end else None
