"""The application's stream time at micro-batch boundaries, kept beside Spark's checkpoint.

A micro-batch normally ends with a pass without records that advances every task to the
application's stream time (closing windows on idle tasks). When more input is already
waiting, that pass is skipped, as Spark skips its no-data batch then, and no task is
advanced before it has read that input (a batch cut mid-backlog must not make a lagging
partition's records late): the first batch that ends with nothing waiting advances them.
Until then the application's stream time is held only by the driver, so it is written
here, with the micro-batch it belongs to, and a restarted application starts the next
batch from it rather than from the tasks' own (older) stream times. A re-run of a batch
starts from the stream time it first ran with, so it sees exactly what its first run saw.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Optional

from streamlib.spark.log_epochs import plain

__all__ = ["StreamTimeLog", "planned_end", "input_waiting"]


class StreamTimeLog:
    """``<checkpoint>/streamlib/stream-time.json``: the last micro-batch run and the
    application's stream time before and after it.

    Examples
    --------
    >>> import tempfile
    >>> log = StreamTimeLog(tempfile.mkdtemp())
    >>> log.start_of(0) is None
    True
    >>> log.record(4, before=1000, after=2500)
    >>> log.start_of(4), log.start_of(5), log.start_of(7)
    (1000, 2500, None)
    """

    def __init__(self, checkpoint: str) -> None:
        self.path = Path(checkpoint) / "streamlib" / "stream-time.json"
        # Read once: a query's batches run one after another in this process, and a
        # re-run of a failed batch comes only with the next start (a new log).
        try:
            self._entry: Optional[dict[str, int]] = json.loads(self.path.read_text())
        except FileNotFoundError:
            self._entry = None

    def start_of(self, batch_id: int) -> Optional[int]:
        """The stream time micro-batch ``batch_id`` starts from, if this log knows it:
        the one it ran with before (a re-run), or the one its predecessor ended with."""
        if self._entry is None:
            return None
        if self._entry["batch"] == batch_id:
            return int(self._entry["before"])
        if self._entry["batch"] == batch_id - 1:
            return int(self._entry["after"])
        return None

    def record(self, batch_id: int, before: int, after: int) -> None:
        """Remember that ``batch_id`` ran from stream time ``before`` to ``after``
        (atomically: a kill leaves the old entry or the new one)."""
        self._entry = {"batch": batch_id, "before": before, "after": after}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self._entry))
        os.replace(temporary, self.path)


def planned_end(checkpoint: str, batch_id: int) -> Optional[dict[str, dict[str, int]]]:
    """The end offsets Spark planned for ``batch_id`` of our source (written to its
    offset log before the batch runs; the first source: the clock of
    :mod:`streamlib.spark.clock`, if any, comes after it), or None if there are none."""
    try:
        lines = (Path(checkpoint) / "offsets" / str(batch_id)).read_text().splitlines()
    except FileNotFoundError:
        return None
    if len(lines) < 3 or not lines[2].startswith("{"):
        return None
    return json.loads(lines[2])


def input_waiting(end: Optional[Mapping[str, Mapping[str, int]]], backend: Any) -> bool:
    """Whether some source partition holds records past ``end`` (a batch's end offsets)."""
    if not end:
        return False
    for topic, partitions in plain(end).items():
        available = backend.end_offsets(topic)
        if any(available.get(int(p), 0) > int(o) for p, o in partitions.items()):
            return True
    return False
