"""Source offsets that carry the log epochs they were read under (KIP-320 for the
``streamlib`` source): a truncated log is read again from where it diverged, never skipped.

The offsets Spark keeps in its checkpoint are ``{topic: {partition: offset}}``; where
the backend keeps epochs (the local log) they also hold ``"@epochs": {topic:
{partition: epoch}}``, the epoch of the last record before each offset, and, for a
batch that starts over where a log diverged, ``"@from": {topic: {partition: offset}}``
(the batch reads from there instead of from the previous batch's end, and a re-run of
it from the checkpoint does the same). ``@`` cannot start a topic name. Checkpoints
written before epochs existed have neither key and are read as before.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping, Optional

from streamlib.errors import RESET_HINT, LogDiverged
from streamlib.topics.epochs import EpochUnknown, diverged_at, epoch_of_end

EPOCHS = "@epochs"
RESUME = "@from"
Offsets = dict[str, dict[str, int]]
log = logging.getLogger("streamlib.source")


def plain(offsets: Optional[Mapping[str, Any]]) -> Offsets:
    """The ``{topic: {partition: offset}}`` part of source offsets.

    >>> plain({"t": {"0": 5}, "@epochs": {"t": {"0": 7}}})
    {'t': {'0': 5}}
    """
    return {t: dict(parts) for t, parts in (offsets or {}).items() if not t.startswith("@")}


def stamped(backend: Any, offsets: Offsets, resumed: Optional[Offsets] = None) -> dict:
    """``offsets`` with the epoch each was read under, and where the batch that ends
    there starts over (``resumed``); read after the offsets, so an offset is never
    stamped with an epoch older than its records."""
    epochs: Offsets = {}
    for topic, parts in offsets.items():
        for partition, offset in parts.items():
            history = backend.epoch_history(topic, int(partition))
            if history is not None:
                epochs.setdefault(topic, {})[partition] = epoch_of_end(history, offset)
    out: dict = dict(offsets)
    if epochs:
        out[EPOCHS] = epochs
    if resumed:
        out[RESUME] = resumed
    return out


def _way_out(application_id: Optional[str]) -> str:
    return (f"run {RESET_HINT.format(app=application_id)} to reprocess the input from the beginning"
            if application_id else "delete the query's checkpoint")


def go_back_where_diverged(backend: Any, offsets: Mapping[str, Any], application_id: Optional[str],
                           announce: bool = True) -> tuple[Offsets, Offsets]:
    """``(offsets to go on from, {topic: {partition: offset}} where they went back)``.

    A partition whose log no longer holds the records read up to its offset under
    their epoch (a cut tail, new appends at the cut offsets, a re-created topic) goes
    back to where the log diverged, so the new records there are read, once. Raises
    :class:`~streamlib.errors.LogDiverged` where the log cannot say where that is."""
    go_on = plain(offsets)
    resumed: Offsets = {}
    for topic, parts in (offsets.get(EPOCHS) or {}).items():
        ends = starts = None
        for partition, epoch in parts.items():
            offset = go_on.get(topic, {}).get(partition)
            history = backend.epoch_history(topic, int(partition))
            if offset is None or history is None:
                continue
            # the end after the history: an epoch it lists is never newer than the records
            ends = ends or backend.end_offsets(topic)
            end, start = ends[int(partition)], 0
            if int(epoch) < history[0][0]:   # read from a topic this one replaced: back to the log start
                starts = starts or backend.start_offsets(topic)
                start = starts[int(partition)]
            try:
                back = diverged_at(history, start, end, int(epoch), offset)
            except EpochUnknown:
                raise LogDiverged(
                    f"topic {topic!r} partition {partition}: the checkpoint read up to offset {offset} under "
                    f"log epoch {epoch}, which the log does not know (its epochs: {list(history)}; epochs "
                    f"file lost, or another log at the same path); where it diverged cannot be known, so "
                    f"the application stops. To go on, {_way_out(application_id)}") from None
            if back is not None and announce:
                log.warning("topic %r partition %s: the log diverged at offset %d from what the checkpoint "
                            "read up to offset %d (log epoch %s, now %s): reading again from offset %d",
                            topic, partition, back, offset, epoch, history[-1][0], back)
            if back is not None:
                go_on[topic][partition] = back
                resumed.setdefault(topic, {})[partition] = back
    return go_on, resumed


def where_to_go_on(backend: Any, previous_end: Mapping[str, Any], application_id: Optional[str]
                   ) -> tuple[Offsets, Offsets]:
    """:func:`go_back_where_diverged` from the previous batch's end, keeping the points
    where that batch was to start over if Spark asked for offsets again before
    planning it (it then plans one batch up to the newer end, from there)."""
    go_on, resumed = go_back_where_diverged(backend, previous_end, application_id)
    for topic, parts in (previous_end.get(RESUME) or {}).items():
        for partition, offset in parts.items():
            resumed.setdefault(topic, {}).setdefault(partition, offset)
    return go_on, resumed


def batch_start(start: Mapping[str, Any], end: Mapping[str, Any]) -> Offsets:
    """Where the batch ``(start, end]`` reads from: ``start``, except where ``end``
    says the batch starts over.

    >>> batch_start({"t": {"0": 1000}}, {"t": {"0": 905}, "@from": {"t": {"0": 900}}})
    {'t': {'0': 900}}
    """
    out = plain(start)
    if out == plain(end):
        return out  # the checkpoint's last batch handed over on restart: nothing to read
    for topic, parts in (end.get(RESUME) or {}).items():
        out.setdefault(topic, {}).update(parts)
    return out


def batch_records(start: Optional[Mapping[str, Any]], end: Optional[Mapping[str, Any]]) -> Optional[int]:
    """How many records the batch ``(start, end]`` reads, as the source plans its ranges
    (from :func:`batch_start`; a partition whose start is past its end reads none); None
    if ``end`` is not known.

    >>> batch_records({"t": {"0": 1000}}, {"t": {"0": 905, "1": 3}, "@from": {"t": {"0": 900}}})
    8
    >>> batch_records(None, {"t": {"0": 4}, "@epochs": {"t": {"0": 2}}})
    4
    """
    if end is None:
        return None
    begin = batch_start(start or {}, end)
    return sum(max(0, offset - begin.get(topic, {}).get(partition, 0))
               for topic, parts in plain(end).items() for partition, offset in parts.items())


def restamped(stamped_offsets: Mapping[str, Any], offsets: Offsets) -> dict:
    """``offsets`` with the epochs of ``stamped_offsets`` (not its start-over points:
    they belong to the batch that ends there, now planned)."""
    return {**offsets, **({EPOCHS: stamped_offsets[EPOCHS]} if EPOCHS in stamped_offsets else {})}


def check_batch_still_there(backend: Any, start: Offsets, end: Mapping[str, Any],
                            application_id: Optional[str]) -> None:
    """Raise :class:`~streamlib.errors.LogDiverged` if a batch about to run (a re-run
    from the checkpoint, after a restart) would read other records than it was planned
    with: the log diverged inside its range, and its first attempt may have applied
    some of the old ones. A partition it reads nothing of is left to the next batch."""
    ends = plain(end)
    _, diverged = go_back_where_diverged(backend, end, application_id, announce=False)
    for topic, parts in diverged.items():
        for partition, back in parts.items():
            first, last = start.get(topic, {}).get(partition, 0), ends[topic][partition]
            if first < last:
                raise LogDiverged(
                    f"topic {topic!r} partition {partition}: the batch to re-run reads offsets {first} to "
                    f"{last}, but the log diverged at offset {back} since it was planned (a cut tail, "
                    f"offsets handed out again); re-running it cannot be exact, so the application "
                    f"stops. To go on, {_way_out(application_id)}")
