"""The changelog positions committed micro-batches reached, kept beside Spark's checkpoint.

A store copy restored from its changelog (a lost state directory, a task moved to another
machine) is only as complete as the changelog. A changelog that lost a committed tail (a
damaged disk; Kafka after an unclean leader election) would restore a copy without those
records, and the task would go on from there without a word: its own copy, the only thing
that knew how far the changelog went, is gone. So after each micro-batch the driver keeps,
per task and logged store, the changelog offset and log epoch its copy reached (reported
by the task), and hands them to the tasks of later batches through a job property: a copy
that must read up to such a position checks that the changelog still holds it
(:meth:`streamlib.state.TaskStores.begin`) and stops with
:class:`~streamlib.errors.ChangelogLost` otherwise (Kafka's consumers check a fetch
position against the log the same way, KIP-320).
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Mapping, Optional

__all__ = ["POSITIONS_PROPERTY", "ChangelogPositions", "positions_of"]

#: Spark local property of a batch's jobs: ``{task id: {store: [offset, epoch, batch]}}``
#: as JSON (:data:`streamlib.state.store.Position`)
POSITIONS_PROPERTY = "streamlib.changelog_positions"


class ChangelogPositions:
    """``<checkpoint>/streamlib/changelog-positions.json``: each task's last reported
    positions (a task that gets no rows in a batch reports none and keeps its old ones).

    Examples
    --------
    >>> import tempfile
    >>> checkpoint = tempfile.mkdtemp()
    >>> positions = ChangelogPositions(checkpoint)
    >>> positions.update({"1_0": {"changelog_positions": {"counts": (12, 7, 3)}}, "0_0": {}})
    >>> positions.save()
    >>> ChangelogPositions(checkpoint).property_value()
    '{"1_0":{"counts":[12,7,3]}}'
    """

    def __init__(self, checkpoint: str) -> None:
        self.path = Path(checkpoint) / "streamlib" / "changelog-positions.json"
        try:
            self._tasks: dict[str, dict[str, list]] = json.loads(self.path.read_text())
        except FileNotFoundError:
            self._tasks = {}
        self._value: Optional[str] = None
        #: whether the file holds :meth:`property_value` (reset by :meth:`update`)
        self._saved = self.path.exists()

    def update(self, reports: Mapping[str, Mapping[str, Any]]) -> None:
        """Take the positions the tasks of a pass reported."""
        for task, metrics in reports.items():
            positions = metrics.get("changelog_positions")
            if positions:
                self._tasks[task] = {store: list(position) for store, position in positions.items()}
                self._value, self._saved = None, False

    def property_value(self) -> str:
        """The job property's value (:data:`POSITIONS_PROPERTY`)."""
        if self._value is None:
            self._value = json.dumps(self._tasks, separators=(",", ":"), sort_keys=True)
        return self._value

    def save(self) -> None:
        """Write the positions atomically (a kill leaves the old file or the new one),
        if a pass changed them since the last write."""
        if self._saved:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(self.property_value())
        os.replace(temporary, self.path)
        self._saved = True


def positions_of(value: Optional[str], task_id: str) -> Optional[dict[str, tuple]]:
    """One task's positions from the job property's ``value`` (None: none known).

    >>> positions_of('{"1_0":{"counts":[12,null,3]}}', "1_0"), positions_of(None, "1_0")
    ({'counts': (12, None, 3)}, None)
    """
    if not value:
        return None
    entries = _parsed(value).get(task_id)
    return None if entries is None else {store: tuple(position) for store, position in entries.items()}


@functools.lru_cache(maxsize=4)
def _parsed(value: str) -> dict:
    """The property parsed once per batch in a worker, not once per task."""
    return json.loads(value)
