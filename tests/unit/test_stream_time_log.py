"""The stream-time log beside Spark's checkpoint (streamlib.spark.stream_time_log)."""
from __future__ import annotations

from streamlib.spark.stream_time_log import StreamTimeLog, input_waiting, planned_end
from streamlib.topics import open_backend


def test_a_batch_starts_from_its_first_run_or_its_predecessors_end(tmp_path):
    log = StreamTimeLog(str(tmp_path))
    assert log.start_of(3) is None
    log.record(3, before=100, after=900)
    assert (log.start_of(3), log.start_of(4)) == (100, 900)
    assert log.start_of(2) is None and log.start_of(5) is None
    log.record(4, before=900, after=1200)      # replaces the entry atomically
    assert (log.start_of(4), log.start_of(5), log.start_of(3)) == (900, 1200, None)
    assert [p.name for p in log.path.parent.iterdir()] == ["stream-time.json"]


def test_planned_end_reads_one_sources_offsets_from_sparks_log(tmp_path):
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    (offsets / "7").write_text('v1\n{"batchWatermarkMs":0}\n{"events":{"0":4,"1":2}}')
    (offsets / "8").write_text('v1\n{"batchWatermarkMs":0}\n{"a":{"0":1}}\n{"tick":3}')
    assert planned_end(str(tmp_path), 7) == {"events": {"0": 4, "1": 2}}
    assert planned_end(str(tmp_path), 8) == {"a": {"0": 1}}     # ours, then the clock
    assert planned_end(str(tmp_path), 9) is None


def test_input_waiting_compares_with_the_log_end(tmp_path):
    backend = open_backend(f"local://{tmp_path}")
    backend.create_topic("events", partitions=2)
    for partition in (0, 1, 1):
        backend.produce("events", key=b"k", value=b"v", timestamp=1, partition=partition)
    backend.flush()
    assert input_waiting({"events": {"0": 1, "1": 2}}, backend) is False
    assert input_waiting({"events": {"0": 1, "1": 1}}, backend) is True
    assert input_waiting(None, backend) is False
