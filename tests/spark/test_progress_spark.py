"""A running application logs one progress line per micro-batch at INFO."""
import logging
import re

from engine import Workspace, wordcount_topology
from streamlib import Streams


def test_each_micro_batch_logs_one_progress_line(spark, tmp_path, caplog):
    ws = Workspace(tmp_path)
    ws.produce("lines", [(None, "a b c"), (None, "a")], partitions=2)
    with caplog.at_level(logging.INFO, logger="streamlib.progress"):
        Streams(wordcount_topology(), ws.config(), spark=spark).process_available()
    lines = [r.getMessage() for r in caplog.records if r.name == "streamlib.progress"]
    assert lines, "no progress line"
    assert re.fullmatch(r"batch 0: 2 records in \([\d,]+/s\), \d+ out \([\d,]+/s\), stream time "
                        r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|-), lag 0, \d+\.\d\d s", lines[0]), lines[0]
