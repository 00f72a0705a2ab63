"""A checkpoint offset beyond a partition's log end stops the application with an
error naming topic, partition, both offsets and the way out; new records are never
skipped silently (issue 11, item 3)."""
from __future__ import annotations

import glob
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


def test_a_torn_input_tail_under_the_checkpoint_stops_instead_of_skipping_new_records(spark, tmp_path, caplog):
    ws = Workspace(tmp_path)
    lines = random_lines(200, 11)
    _produce_in_two_appends(ws, lines)
    ws.run(spark, wordcount_topology())  # the checkpoint is at offset 200
    # Tear the second append's frame: the log now ends at 100.
    [segment] = glob.glob(str(tmp_path / "log" / "lines" / "0" / "*.log"))
    with open(segment, "r+b") as f:
        f.truncate(os.path.getsize(segment) - 10)
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


def test_a_recreated_input_topic_stops_the_application(spark, tmp_path):
    ws = Workspace(tmp_path)
    ws.produce("lines", [(None, line) for line in random_lines(50, 12)])
    ws.run(spark, wordcount_topology())
    ws.backend.delete_topic("lines")
    ws.produce("lines", [(None, "a new beginning")] * 5)
    with pytest.raises(OffsetOutOfRange, match="checkpoint is at offset 50 but the log ends at offset 5"):
        Streams(wordcount_topology(), ws.config(), spark=spark).process_available()
