"""Restore: rebuild or catch up a local copy from the changelog, incrementally, and only
with batches older than the one about to run."""
import shutil

import pytest

from streamlib.state import StoreSpec, open_task_stores
from streamlib.state.rocksdb import RocksDB
from streamlib.topics import open_backend

TOPIC = "app-counts-changelog"
SPEC = StoreSpec("counts", changelog_topic=TOPIC)


@pytest.fixture
def backend(tmp_path):
    return open_backend(f"local://{tmp_path}/topics?fsync=false")


def open_copy(tmp_path, backend, copy="a", **kwargs):
    """A task's stores in one of several state dirs (executors with their own disks)."""
    return open_task_stores(tmp_path / copy / "app" / "0_0", [SPEC], backend=backend,
                            partition=0, num_partitions=1, producer_prefix="app", **kwargs)


def run(stores, batch, items):
    stores.begin(batch)
    stores["counts"].put_many(items)
    stores.commit()


def contents(stores):
    return list(stores["counts"].all())


def test_lost_state_dir_is_restored(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        for batch in range(3):
            run(stores, batch, [(b"k%d" % i, b"%d" % batch) for i in range(batch, 10)])
        stores.begin(3)
        stores["counts"].delete(b"k9")
        stores.commit()
        before = contents(stores)
    shutil.rmtree(tmp_path / "a")
    with open_copy(tmp_path, backend) as stores:
        stores.begin(4)
        assert contents(stores) == before
        assert stores.metrics()["restored_records"] == 10 + 9 + 8 + 1


def test_catch_up_is_incremental(tmp_path, backend):
    with open_copy(tmp_path, backend, "a") as a:
        run(a, 0, [(b"x", b"0"), (b"y", b"0")])
    with open_copy(tmp_path, backend, "b") as b:
        b.begin(1)
        assert b.metrics()["restored_records"] == 2
        b["counts"].put(b"x", b"1")
        b.commit()
        run(b, 2, [(b"z", b"2")])
        expected = contents(b)
    with open_copy(tmp_path, backend, "a") as a:
        a.begin(3)
        assert a.metrics()["restored_records"] == 2
        assert contents(a) == expected == [(b"x", b"1"), (b"y", b"0"), (b"z", b"2")]
    with open_copy(tmp_path, backend, "a") as a:
        a.begin(3)
        assert a.metrics()["restored_records"] == 0


def test_restore_skips_records_of_the_batch_being_rerun(tmp_path, backend):
    with open_copy(tmp_path, backend, "a") as a:
        run(a, 0, [(b"x", b"0")])
        run(a, 1, [(b"x", b"1"), (b"y", b"1")])
    with open_copy(tmp_path, backend, "b") as b:
        b.begin(1)
        assert contents(b) == [(b"x", b"0")]


def test_interrupted_restore_resumes_where_it_stopped(tmp_path, backend, monkeypatch):
    with open_copy(tmp_path, backend, "a") as a:
        for batch in range(10):
            run(a, batch, [(b"k%02d" % (batch * 10 + i), b"v") for i in range(10)])
    real_write, writes = RocksDB.write, []

    def failing_write(self, data, meta):
        writes.append(1)
        if len(writes) == 4:
            raise OSError("disk full")
        real_write(self, data, meta)

    monkeypatch.setattr(RocksDB, "write", failing_write)
    with open_copy(tmp_path, backend, "b", restore_chunk=25) as b:
        with pytest.raises(OSError):
            b.begin(10)
    monkeypatch.undo()
    with open_copy(tmp_path, backend, "b", restore_chunk=25) as b:
        b.begin(10)
        assert b.metrics()["restored_records"] == 25
        assert len(contents(b)) == 100


def test_restore_from_a_compacted_changelog(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        for batch in range(5):
            run(stores, batch, [(b"k%d" % i, b"%d" % batch) for i in range(20)])
        stores.begin(5)
        stores["counts"].put_many([(b"k%d" % i, None) for i in range(10)])
        stores.commit()
        expected = contents(stores)
    backend.compact(TOPIC)
    shutil.rmtree(tmp_path / "a")
    with open_copy(tmp_path, backend) as stores:
        stores.begin(6)
        assert contents(stores) == expected
        assert stores.metrics()["restored_records"] < 5 * 20 + 10


def test_recreated_changelog_replaces_the_local_copy(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        for batch in range(3):
            run(stores, batch, [(b"old%d" % batch, b"v")])
    backend.delete_topic(TOPIC)
    with open_copy(tmp_path, backend, "other") as stores:
        run(stores, 0, [(b"new", b"v")])
    with open_copy(tmp_path, backend) as stores:
        stores.begin(3)
        assert contents(stores) == [(b"new", b"v")]
        assert stores.metrics()["stores"]["counts"]["dropped_copies"] == 1


def test_store_without_logging_starts_empty_after_losing_its_dir(tmp_path, backend):
    spec = StoreSpec("local", logging=False)
    task_dir = tmp_path / "a" / "app" / "0_0"
    with open_task_stores(task_dir, [spec], backend=backend) as stores:
        stores.begin(0)
        stores["local"].put(b"a", b"1")
        stores.commit()
    shutil.rmtree(task_dir)
    with open_task_stores(task_dir, [spec], backend=backend) as stores:
        stores.begin(1)
        assert list(stores["local"].all()) == []


def test_task_metadata_restores_from_its_topic(tmp_path, backend):
    with open_copy(tmp_path, backend, meta_changelog_topic="app-meta") as stores:
        stores.begin(0)
        stores.meta_put("stream_time", b"99")
        stores.commit()
    shutil.rmtree(tmp_path / "a")
    with open_copy(tmp_path, backend, meta_changelog_topic="app-meta") as stores:
        stores.begin(1)
        assert stores.meta_get("stream_time") == b"99"


@pytest.mark.parametrize("words", ["Too many open files", "No space left on device"])
def test_a_copy_that_cannot_be_opened_for_want_of_a_resource_is_kept_and_the_error_raised(
        tmp_path, backend, monkeypatch, words):
    """A soak that ran out of file descriptors had its stores' local copies dropped as
    damaged (and those without a changelog restored from nothing): such an error is the
    process's, not the copy's."""
    with open_copy(tmp_path, backend) as stores:
        run(stores, 0, [(b"k", b"1")])
    real_open = RocksDB.open

    def failing_open(path, *args, **kwargs):
        if str(path).endswith("counts"):
            raise Exception(f"IO error: While opendir: {path}: {words}")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(RocksDB, "open", staticmethod(failing_open))
    with pytest.raises(Exception, match=words):
        open_copy(tmp_path, backend)
    monkeypatch.setattr(RocksDB, "open", real_open)
    with open_copy(tmp_path, backend) as stores:
        stores.begin(1)
        assert contents(stores) == [(b"k", b"1")]
        assert stores.metrics()["restored_records"] == 0
        assert stores.metrics()["stores"]["counts"]["dropped_copies"] == 0
