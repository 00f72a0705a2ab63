"""A truncated input log never makes the application skip new records (issues 11 and 37):
the checkpoint's offsets carry the log epochs they were read under, so after a cut
tail (followed by appends at the cut offsets) or a re-created topic the application
reads again from where the log diverged, each new record once; a checkpoint written
before epochs existed still stops with an error naming topic, partition, both offsets
and the way out."""
from __future__ import annotations

import glob
import json
import logging
import os

import pytest

from streamlib import Streams
from streamlib.errors import OffsetOutOfRange
from engine import Workspace, python_count, wordcount_topology
from test_engine_spark import random_lines


def _produce_in_two_appends(ws: Workspace, lines: list[str]) -> None:
    half = len(lines) // 2
    ws.produce("lines", [(None, line) for line in lines[:half]])
    ws.produce("lines", [(None, line) for line in lines[half:]])


def _tear_the_last_frame(tmp_path) -> None:
    [segment] = glob.glob(str(tmp_path / "log" / "lines" / "0" / "*.log"))
    with open(segment, "r+b") as f:
        f.truncate(os.path.getsize(segment) - 10)


def test_a_torn_tail_then_appends_at_the_cut_offsets_are_read_exactly_once(spark, tmp_path, caplog):
    """The issue's case: records processed and checkpointed, the log's last frame lost,
    then new records at the reused offsets, then a restart."""
    ws = Workspace(tmp_path)
    lines = random_lines(200, 11)
    _produce_in_two_appends(ws, lines)
    ws.run(spark, wordcount_topology())  # the checkpoint is at offset 200
    _tear_the_last_frame(tmp_path)       # the log now ends at 100
    fresh = random_lines(400, 12)
    with caplog.at_level(logging.WARNING):
        ws.produce("lines", [(None, line) for line in fresh])  # offsets 100..499
        assert ws.backend.end_offsets("lines") == {0: 500}
        app = ws.run(spark, wordcount_topology())
    assert dict(app.store("counts").all()) == dict(python_count(lines) + python_count(fresh))
    assert "new log epoch" in caplog.text
    # the batch that went back says so in the checkpoint, so a re-run of it reads the same
    planned = [json.loads(open(path).read().split("\n")[2])
               for path in glob.glob(os.path.join(ws.config().resolved_checkpoint_location(), "offsets", "*"))
               if os.path.basename(path).isdigit()]
    assert {"lines": {"0": 100}} in [offsets.get("@from") for offsets in planned]


def test_a_recreated_input_topic_is_read_from_its_start(spark, tmp_path):
    ws = Workspace(tmp_path)
    old = random_lines(50, 12)
    ws.produce("lines", [(None, line) for line in old])
    ws.run(spark, wordcount_topology())
    ws.backend.delete_topic("lines")
    ws.produce("lines", [(None, "a new beginning")] * 5)
    app = ws.run(spark, wordcount_topology())
    assert dict(app.store("counts").all()) == dict(python_count(old) + python_count(["a new beginning"] * 5))


def _forget_epochs(checkpoint: str) -> None:
    """Make the checkpoint look written before epochs existed."""
    for path in glob.glob(os.path.join(checkpoint, "offsets", "*")):
        if os.path.basename(path).isdigit():
            lines = open(path).read().split("\n")
            lines[2] = json.dumps({t: p for t, p in json.loads(lines[2]).items() if not t.startswith("@")})
            with open(path, "w") as f:
                f.write("\n".join(lines))
    for crc in glob.glob(os.path.join(checkpoint, "offsets", ".*.crc")):
        os.unlink(crc)


def test_a_checkpoint_from_before_epochs_stops_instead_of_skipping_new_records(spark, tmp_path, caplog):
    ws = Workspace(tmp_path)
    lines = random_lines(200, 11)
    _produce_in_two_appends(ws, lines)
    ws.run(spark, wordcount_topology())
    _forget_epochs(ws.config().resolved_checkpoint_location())
    _tear_the_last_frame(tmp_path)
    with caplog.at_level(logging.WARNING, logger="streamlib.topics"):
        ws.produce("lines", [(None, "fresh words after the tear")] * 30)  # offsets 100..129
    assert "cutting a torn tail" in caplog.text
    assert ws.backend.end_offsets("lines") == {0: 130}

    app = Streams(wordcount_topology(), ws.config(), spark=spark)
    with pytest.raises(OffsetOutOfRange) as failure:
        app.process_available()
    message = str(failure.value)
    for part in ("topic 'lines' partition 0", "checkpoint is at offset 200", "log ends at offset 130",
                 "python -m streamlib reset --application-id app"):
        assert part in message
    assert len(message) < 600, "a short message, not Spark's trace"
    assert failure.value.__cause__ is not None, "the Spark exception is chained underneath"
    assert dict(app.store("counts").all()) == dict(python_count(lines))  # nothing new was applied
