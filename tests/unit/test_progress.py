"""The progress line of a micro-batch, from the checkpoint's offset log and the input's end offsets."""
import json
import logging

from streamlib.progress import Progress
from streamlib.topics import open_backend


def _offsets(checkpoint, batch_id, offsets):
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "offsets" / str(batch_id)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{json.dumps(offsets)}')


def test_a_batch_logs_one_line_with_its_records_stream_time_and_lag(tmp_path, caplog):
    backend = open_backend(f"local://{tmp_path}/data")
    backend.create_topic("in", partitions=2)
    for i in range(10):
        backend.produce("in", value=b"x", partition=i % 2)
    backend.flush()
    checkpoint = tmp_path / "checkpoint"
    _offsets(checkpoint, 0, {"in": {"0": 2, "1": 1}})
    _offsets(checkpoint, 1, {"in": {"0": 4, "1": 4}})
    progress = Progress()
    progress.watch(str(checkpoint), backend)
    reports = {"0_0": {"records_in": 99, "records_out": 3}, "0_1": {"records_out": 2}}
    with caplog.at_level(logging.INFO, logger="streamlib.progress"):
        progress.batch_done(1, reports, 2.0, 60_000)
    assert caplog.messages == ["batch 1: 5 records in (2/s), 5 out (2/s), stream time "
                               "1970-01-01T00:01:00Z, lag 2, 2.00 s"]
    backend.close()


def test_nothing_is_logged_by_default_and_a_broken_checkpoint_never_fails_the_batch(tmp_path, caplog):
    progress = Progress()
    progress.watch(str(tmp_path / "no-checkpoint"), None)
    with caplog.at_level(logging.WARNING, logger="streamlib.progress"):
        progress.batch_done(0, {"0_0": {"records_in": 4, "records_out": 1}}, 0.5, -1)
    assert caplog.messages == []
    (tmp_path / "bad" / "offsets").mkdir(parents=True)
    (tmp_path / "bad" / "offsets" / "0").write_text('v1\n{}\n{"in": {"0": "not a number"}}')
    progress.watch(str(tmp_path / "bad"), None)
    with caplog.at_level(logging.INFO, logger="streamlib.progress"):
        progress.batch_done(0, {}, 0.5, -1)   # logs a warning, raises nothing
    assert caplog.messages == ["cannot report the progress of batch 0"]


def test_catching_up_moves_a_bar_to_the_records_read(tmp_path):
    checkpoint = tmp_path / "checkpoint"
    _offsets(checkpoint, 0, {"in": {"0": 3}})
    _offsets(checkpoint, 1, {"in": {"0": 10}})
    progress = Progress()
    progress.watch(str(checkpoint), None)
    progress.catching_up()
    progress.batch_done(0, {}, 0.1, -1)
    progress.batch_done(1, {}, 0.1, -1)
    assert progress.caught_up == 10
    progress.done()
