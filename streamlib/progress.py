"""What a running application tells its user while it runs: quiet by default.

Each micro-batch logs one line at INFO on the ``streamlib.progress`` logger (Python
logging, so nothing shows until the application asks for it, e.g.
``logging.basicConfig(level=logging.INFO)``)::

    batch 3: 2,000 records in (1,250/s), 1,800 out (1,125/s), stream time 2026-11-27T21:50:00Z, lag 0, 1.60 s

``process_available()`` catching up on a backlog shows a progress bar on a terminal
(tqdm: only when stderr is one, and only once the catch-up has taken 2 s).
"""
from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any, Mapping, Optional

log = logging.getLogger("streamlib.progress")

#: A catch-up shorter than this shows no bar at all.
BAR_DELAY_SECONDS = 2.0

Offsets = Mapping[str, Mapping[str, int]]


def format_stream_time(ms: int) -> str:
    """Epoch milliseconds as UTC ISO time, ``-`` before any record.

    >>> format_stream_time(0), format_stream_time(-1)
    ('1970-01-01T00:00:00Z', '-')
    """
    if ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def batch_line(batch_id: int, records_in: int, records_out: int, seconds: float, stream_time: int,
               lag: Optional[int]) -> str:
    """The progress line of one micro-batch.

    >>> batch_line(3, 2000, 1800, 1.6, 0, 0)
    'batch 3: 2,000 records in (1,250/s), 1,800 out (1,125/s), stream time 1970-01-01T00:00:00Z, lag 0, 1.60 s'
    """
    rate = 1 / seconds if seconds > 0 else 0.0
    lag_text = "?" if lag is None else f"{lag:,}"
    return (f"batch {batch_id}: {records_in:,} records in ({records_in * rate:,.0f}/s), "
            f"{records_out:,} out ({records_out * rate:,.0f}/s), stream time {format_stream_time(stream_time)}, "
            f"lag {lag_text}, {seconds:.2f} s")


class Progress:
    """Progress of one application: :meth:`watch` when its query starts, then
    :meth:`batch_done` after every micro-batch."""

    def __init__(self) -> None:
        self.checkpoint = ""
        self.backend: Any = None
        self._bar: Any = None
        self._catching_up = False
        self._caught_up = 0

    def watch(self, checkpoint: str, backend: Any = None) -> None:
        """Follow a query whose Spark checkpoint is ``checkpoint`` (its offset log says
        what each batch read); ``backend``: the input topics, for the lag (``None``:
        lag unknown)."""
        self.checkpoint, self.backend = checkpoint, backend

    def catching_up(self) -> None:
        """The next batches catch up on a backlog (``process_available()``): show a bar."""
        self._catching_up, self._caught_up = True, 0

    @property
    def caught_up(self) -> int:
        """Records read since :meth:`catching_up` (what the bar shows)."""
        return self._caught_up

    def done(self) -> None:
        """The catch-up is over: remove the bar."""
        self._catching_up = False
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def batch_done(self, batch_id: int, reports: Mapping[str, Mapping[str, Any]], seconds: float,
                   stream_time: int) -> None:
        """Log micro-batch ``batch_id`` (its tasks' ``reports``) and move the bar. A
        failure here is logged, never raised: the batch itself has succeeded."""
        try:
            self._report(batch_id, reports, seconds, stream_time)
        except Exception:  # noqa: BLE001 - progress must not fail a committed batch
            log.warning("cannot report the progress of batch %d", batch_id, exc_info=True)

    def _report(self, batch_id: int, reports: Mapping[str, Mapping[str, Any]], seconds: float,
                stream_time: int) -> None:
        from .spark.log_epochs import batch_records
        from .spark.stream_time_log import planned_end

        end = planned_end(self.checkpoint, batch_id)
        read = batch_records(planned_end(self.checkpoint, batch_id - 1) if batch_id > 0 else None, end)
        records_in = read if read is not None else sum(int(m.get("records_in", 0)) for m in reports.values())
        records_out = sum(int(m.get("records_out", 0)) for m in reports.values())
        lag = self._lag(end)
        if log.isEnabledFor(logging.INFO):
            log.info(batch_line(batch_id, records_in, records_out, seconds, stream_time, lag))
        if self._catching_up:
            self._advance(records_in, lag)

    def _lag(self, end: Optional[Offsets]) -> Optional[int]:
        if self.backend is None or end is None:
            return None
        topics = [topic for topic in end if not topic.startswith("@")]   # "@": log epochs
        latest = {topic: self.backend.end_offsets(topic) for topic in topics}
        return sum(max(0, latest[topic].get(int(p), 0) - off) for topic in topics
                   for p, off in end[topic].items())

    def _advance(self, records: int, lag: Optional[int]) -> None:
        from tqdm import tqdm

        self._caught_up += records
        if self._bar is None:
            self._bar = tqdm(total=self._caught_up + (lag or 0), unit=" records", unit_scale=True,
                             desc="catching up", delay=BAR_DELAY_SECONDS, disable=None, leave=False)
        else:
            self._bar.total = self._caught_up + (lag or 0)
        self._bar.update(records)
