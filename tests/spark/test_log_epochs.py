"""Log epochs of the local log (KIP-320 for the embedded log): a cut tail or a re-created
topic starts a new epoch, so readers and store copies that read the lost records find
out where the log diverged instead of skipping what is now at those offsets. No Spark."""
from __future__ import annotations

import glob
import json
import logging
import os
import time

import pyarrow as pa

from streamlib.state import StoreSpec, open_task_stores
from streamlib.topics import open_backend
from streamlib.topics.epochs import EPOCHS_FILE, diverged_at, epoch_of_end, first_epoch


def produce(backend, topic, values):
    for value in values:
        backend.produce(topic, key=value, value=value, partition=0)
    backend.flush()


def last_segment(root, topic):
    return sorted(glob.glob(os.path.join(root, topic, "0", "*.log")))[-1]


def commit_batches(stores, pairs):
    """One batch per ``(key, value)``, numbered from 0."""
    for batch, (key, value) in enumerate(pairs):
        stores.begin(batch)
        stores["counts"].put(key, value)
        stores.commit()


def tear_last_frame(root, topic="app-counts-changelog"):
    """The last frame of the partition's last segment is torn."""
    segment = last_segment(root, topic)
    with open(segment, "r+b") as f:
        f.truncate(os.path.getsize(segment) - 5)


def copies_of_one_changelog(tmp_path, root):
    """``open_copy(name)``: task stores (one store, ``counts``) in their own directory,
    all on one changelog in the local log at ``root``."""
    backend = open_backend(f"local://{root}?fsync=false")
    spec = StoreSpec("counts", changelog_topic="app-counts-changelog")

    def open_copy(name):
        return open_task_stores(tmp_path / name, [spec], backend=backend, partition=0, num_partitions=1,
                                producer_prefix="app")
    return open_copy


def test_a_new_topic_starts_an_epoch_above_older_topics(tmp_path):
    backend = open_backend(f"local://{tmp_path}")
    backend.create_topic("t")
    [(first, start)] = backend.epoch_history("t", 0)
    assert start == 0 and first >> 20 <= int(time.time() * 1000)
    backend.delete_topic("t")
    backend.create_topic("t")
    [(again, _)] = backend.epoch_history("t", 0)
    assert again > first
    assert diverged_at(backend.epoch_history("t", 0), 0, 0, first, 50) == 0  # back to the new start


def test_topics_created_in_the_same_millisecond_get_increasing_epochs():
    first = first_epoch(now_ms=1000)
    again = first_epoch(now_ms=1000)
    assert again >= first + (1 << 20)  # above the bumps the first topic may have had


def test_a_cut_tail_starts_an_epoch_where_offsets_are_handed_out_again(tmp_path, caplog):
    root = str(tmp_path / "log")
    backend = open_backend(f"local://{root}")
    backend.create_topic("t")
    produce(backend, "t", [b"a", b"b"])
    backend.append("t", 0, pa.table({"timestamp": [1, 2], "key": [b"c", b"d"], "value": [b"c", b"d"],
                                     "headers": pa.array([[], []], pa.list_(pa.struct(
                                         [("key", pa.string()), ("value", pa.binary())])))}))
    history = backend.epoch_history("t", 0)
    read_under = epoch_of_end(history, 4)  # a reader read all four records
    segment = last_segment(root, "t")
    with open(segment, "r+b") as f:      # the last frame is torn
        f.truncate(os.path.getsize(segment) - 5)
    with caplog.at_level(logging.WARNING, logger="streamlib.topics"):
        produce(backend, "t", [b"new1", b"new2", b"new3"])  # offsets 2..4, reused
    assert "new log epoch" in caplog.text
    history = backend.epoch_history("t", 0)
    assert history == ((read_under, 0), (read_under + 1, 2))
    assert diverged_at(history, 0, 5, read_under, 4) == 2   # read 2 and 3 again: new records
    assert [r.value for r in backend.read("t", 0, 2, 5)] == [b"new1", b"new2", b"new3"]


def test_a_reader_that_knew_the_cut_frames_reads_the_new_ones(tmp_path):
    """A long-lived reader (a Spark Python worker) knew the frame that was cut; the
    writer appended a new frame in its place: the reader must read the new records."""
    root = str(tmp_path / "log")
    writer, reader = open_backend(f"local://{root}"), open_backend(f"local://{root}")
    writer.create_topic("t")
    produce(writer, "t", [b"a"])
    produce(writer, "t", [b"b", b"c"])
    assert [r.value for r in reader.read("t", 0, 0, 3)] == [b"a", b"b", b"c"]
    segment = last_segment(root, "t")
    with open(segment, "r+b") as f:
        f.truncate(os.path.getsize(segment) - 5)
    produce(writer, "t", [b"new1", b"new2", b"new3", b"new4"])
    assert reader.end_offsets("t") == {0: 5}
    assert [r.value for r in reader.read("t", 0, 0, 5)] == [b"a", b"new1", b"new2", b"new3", b"new4"]


def test_frames_lost_at_a_frame_boundary_are_found_through_the_index(tmp_path):
    """A disk that lost the last frame whole (no torn bytes left): the index still
    lists it, so the next writer knows offsets will be handed out again."""
    root = str(tmp_path / "log")
    backend = open_backend(f"local://{root}")
    backend.create_topic("t")
    produce(backend, "t", [b"a"])
    boundary = os.path.getsize(last_segment(root, "t"))
    produce(backend, "t", [b"b", b"c"])
    backend.close()
    with open(last_segment(root, "t"), "r+b") as f:
        f.truncate(boundary)
    writer = open_backend(f"local://{root}")
    [(epoch, _)] = writer.epoch_history("t", 0)
    produce(writer, "t", [b"x"])
    assert writer.epoch_history("t", 0) == ((epoch, 0), (epoch + 1, 1))
    assert diverged_at(writer.epoch_history("t", 0), 0, 2, epoch, 3) == 1


def test_a_partition_from_before_epochs_keeps_working(tmp_path):
    root = str(tmp_path / "log")
    backend = open_backend(f"local://{root}")
    backend.create_topic("t")
    produce(backend, "t", [b"a"])
    produce(backend, "t", [b"b"])
    os.unlink(os.path.join(root, "t", "0", EPOCHS_FILE))
    backend.close()
    old = open_backend(f"local://{root}")
    assert old.epoch_history("t", 0) == ((0, 0),)
    with open(last_segment(root, "t"), "r+b") as f:
        f.truncate(os.path.getsize(f.name) - 3)
    produce(old, "t", [b"c"])
    assert old.epoch_history("t", 0) == ((0, 0), (1, 1))
    with open(os.path.join(root, "t", "0", EPOCHS_FILE)) as f:
        assert json.load(f) == {"epochs": [[0, 0], [1, 1]]}


def test_a_store_copy_that_read_a_cut_changelog_tail_is_rebuilt(tmp_path, caplog):
    """Copy a reflects changelog offsets 0..1; the changelog loses offset 1 and copy b
    writes a new record there. Back on copy a, catching up from offset 2 would keep the
    lost record and miss the new one: the epochs say so, and the copy is rebuilt."""
    root = str(tmp_path / "log")
    open_copy = copies_of_one_changelog(tmp_path, root)

    def run(stores, batch, key, value):
        stores.begin(batch)
        stores["counts"].put(key, value)
        stores.commit()

    with open_copy("a") as a:
        run(a, 0, b"x", b"0")
        run(a, 1, b"y", b"1")
    tear_last_frame(root)  # batch 1's frame
    with open_copy("b") as b:
        run(b, 2, b"z", b"2")       # offset 1 again
    with caplog.at_level(logging.WARNING, logger="streamlib.state"), open_copy("a") as a:
        a.begin(3)
        assert dict(a["counts"].all()) == {b"x": b"0", b"z": b"2"}
    assert "no longer holds as read" in caplog.text


def test_a_batch_rerun_over_a_diverged_range_stops_and_a_handover_does_not(tmp_path):
    """The source's checks (streamlib.spark.log_epochs), without a SparkSession."""
    import pytest

    from streamlib.errors import LogDiverged
    from streamlib.spark import log_epochs

    root = str(tmp_path / "log")
    backend = open_backend(f"local://{root}")
    backend.create_topic("t")
    produce(backend, "t", [b"a"])
    produce(backend, "t", [b"b", b"c"])
    end = log_epochs.stamped(backend, {"t": {"0": 3}})
    with open(last_segment(root, "t"), "r+b") as f:
        f.truncate(os.path.getsize(f.name) - 5)
    produce(backend, "t", [b"x", b"y", b"z"])
    with pytest.raises(LogDiverged, match=r"topic 't' partition 0: the batch to re-run reads offsets 1 to 3, "
                                          r"but the log diverged at offset 1.*reset --application-id app"):
        log_epochs.check_batch_still_there(backend, {"t": {"0": 1}}, end, "app")
    log_epochs.check_batch_still_there(backend, {"t": {"0": 3}}, end, "app")  # restart hand-over
    go_on, resumed = log_epochs.go_back_where_diverged(backend, end, "app")
    assert go_on == resumed == {"t": {"0": 1}}
    next_end = log_epochs.stamped(backend, {"t": {"0": 4}}, resumed)
    assert log_epochs.batch_start(end, next_end) == {"t": {"0": 1}}
    # asked again before that batch was planned: it still starts over at 1
    assert log_epochs.where_to_go_on(backend, next_end, "app") == ({"t": {"0": 4}}, {"t": {"0": 1}})
    assert log_epochs.where_to_go_on(backend, log_epochs.restamped(next_end, {"t": {"0": 4}}), "app") == (
        {"t": {"0": 4}}, {})
    unknown = {**end, log_epochs.EPOCHS: {"t": {"0": end[log_epochs.EPOCHS]["t"]["0"] + 10}}}
    with pytest.raises(LogDiverged, match="log epoch .* which the log does not know"):
        log_epochs.go_back_where_diverged(backend, unknown, "app")


def test_a_copy_logs_again_what_only_it_still_reflects(tmp_path, caplog):
    """The changelog lost batch 1's frame and nothing took its place: the copy that
    reflects it logs its contents again, so a copy restored later has batch 1 too."""
    root = str(tmp_path / "log")
    open_copy = copies_of_one_changelog(tmp_path, root)

    with open_copy("a") as a:
        commit_batches(a, [(b"x", b"0"), (b"y", b"1")])
    tear_last_frame(root)  # batch 1's frame
    with caplog.at_level(logging.WARNING, logger="streamlib.state"), open_copy("a") as a:
        a.begin(2)
        assert dict(a["counts"].all()) == {b"x": b"0", b"y": b"1"}
    assert "logged the copy's contents again" in caplog.text
    with open_copy("b") as b:
        b.begin(2)
        assert dict(b["counts"].all()) == {b"x": b"0", b"y": b"1"}


def test_a_copy_logged_again_deletes_what_the_lost_records_deleted(tmp_path):
    """Batch 1 deleted ``y`` and its changelog frame was lost: the copy that reflects it
    logs its contents again with a delete of ``y``, so a copy restored later does not
    bring ``y`` back (found by ``make faults``: an expired window's deletes lost)."""
    root = str(tmp_path / "log")
    open_copy = copies_of_one_changelog(tmp_path, root)

    with open_copy("a") as a:
        a.begin(0)
        a["counts"].put(b"x", b"0")
        a["counts"].put(b"y", b"0")
        a.commit()
        a.begin(1)
        a["counts"].delete(b"y")
        a.commit()
    tear_last_frame(root)  # batch 1's frame (the delete of y)
    with open_copy("a") as a:
        a.begin(2)
        assert dict(a["counts"].all()) == {b"x": b"0"}
    with open_copy("b") as b:
        b.begin(2)
        assert dict(b["counts"].all()) == {b"x": b"0"}


def test_a_restore_that_would_miss_committed_changelog_records_stops(tmp_path):
    """The double fault: batch 1's changelog frame is lost *and* so is the copy that held
    it. A copy restored from the changelog would go on without batch 1; the position the
    driver kept from batch 1's report says the changelog went further, so it stops."""
    import pytest

    from streamlib.errors import ChangelogLost

    root = str(tmp_path / "log")
    open_copy = copies_of_one_changelog(tmp_path, root)
    with open_copy("a") as a:
        commit_batches(a, [(b"x", b"0"), (b"y", b"1")])
        committed = a.changelog_positions()
    assert committed["counts"][0] == 2 and committed["counts"][2] == 1
    with open_copy("b") as b:   # nothing lost yet: a restore reaches the position
        b.begin(2, committed)
        assert dict(b["counts"].all()) == {b"x": b"0", b"y": b"1"}
    tear_last_frame(root)  # batch 1's frame
    with open_copy("c") as c, pytest.raises(
            ChangelogLost, match=r"store 'counts': changelog 'app-counts-changelog' partition 0 no longer "
                                 r"holds offsets 1 to 2, .* this copy holds none of it.*reset --application-id app"):
        c.begin(2, committed)
    with open_copy("a") as a:   # the copy that still holds batch 1 repairs the changelog
        a.begin(2, committed)
        assert dict(a["counts"].all()) == {b"x": b"0", b"y": b"1"}
    with open_copy("d") as d:
        d.begin(2, committed)
        assert dict(d["counts"].all()) == {b"x": b"0", b"y": b"1"}
