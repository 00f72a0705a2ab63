"""Replay safety: a batch run once, or crashed anywhere in commit and re-run, leaves the
same store contents and the same changelog-derived restore."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from streamlib.state import StoreSpec, open_task_stores
from streamlib.state.changelog import Changelog
from streamlib.state.rocksdb import RocksDB
from streamlib.topics import open_backend

SPECS = [StoreSpec("counts", changelog_topic="app-counts-changelog"),
         StoreSpec("sums", changelog_topic="app-sums-changelog")]
BATCHES = 6


class Crash(Exception):
    pass


def topics(root):
    return open_backend(f"local://{root}/topics?fsync=false")


def changelog_ends(root):
    backend = topics(root)
    return {topic: backend.end_offsets(topic) for topic in sorted(backend.list_topics())}


def open_copy(root, copy="a"):
    backend = topics(root)
    return open_task_stores(root / copy / "app" / "0_0", SPECS, backend=backend, partition=0,
                            num_partitions=1, producer_prefix="app", meta_changelog_topic="app-meta")


def work(stores, batch):
    """A batch whose writes depend on the state before it, so a half-undone batch shows."""
    counts, sums = stores["counts"], stores["sums"]
    keys = [b"k%d" % ((batch * 7 + i) % 23) for i in range(10)]
    for key, old in zip(keys, counts.get_many(keys)):
        counts.put(key, b"%d" % (int(old or b"0") + 1))
    counts.delete(b"k%d" % (batch % 23))
    total = int(sums.get(b"total") or b"0") + sum(int(v or b"0") for _, v in counts.all())
    sums.put(b"total", b"%d" % total)
    stores.meta_put("stream_time", b"%d" % (batch * 1000))


def run_batch(stores, batch):
    stores.begin(batch)
    work(stores, batch)
    stores.commit()


def snapshot(stores):
    return ({name: list(stores[name].all()) for name in stores}, stores.meta_get("stream_time"))


def restored(root, batch):
    """What a fresh copy rebuilds from the changelogs before running ``batch``."""
    shutil.rmtree(root / "fresh", ignore_errors=True)
    with open_copy(root, "fresh") as stores:
        stores.begin(batch)
        return snapshot(stores)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Store contents and restores of a clean run of every batch."""
    root = tmp_path_factory.mktemp("reference")
    with open_copy(root) as stores:
        for batch in range(BATCHES):
            run_batch(stores, batch)
        state = snapshot(stores)
    return state, restored(root, BATCHES)


def crash_at(monkeypatch, point, store="counts"):
    """Make the next commit of ``store`` raise at ``point``."""
    real_append, real_write = Changelog.append, RocksDB.write

    def append(self, *args):
        if self.topic == f"app-{store}-changelog":
            if point == "before_append":
                raise Crash(point)
            result = real_append(self, *args)
            if point == "after_append":
                raise Crash(point)
            return result
        return real_append(self, *args)

    def write(self, data, meta):
        real_write(self, data, meta)
        if point == "after_write" and self.path.endswith(store) and b"undo" in meta and meta[b"undo"]:
            raise Crash(point)

    monkeypatch.setattr(Changelog, "append", append)
    monkeypatch.setattr(RocksDB, "write", write)


@pytest.mark.parametrize("point", ["before_append", "after_append", "after_write"])
@pytest.mark.parametrize("store", ["counts", "sums"])
def test_crash_anywhere_in_commit_then_rerun(tmp_path, monkeypatch, reference, point, store):
    crashed_batch = 3
    with open_copy(tmp_path) as stores:
        for batch in range(crashed_batch):
            run_batch(stores, batch)
        crash_at(monkeypatch, point, store)
        with pytest.raises(Crash):
            run_batch(stores, crashed_batch)
        monkeypatch.undo()
    with open_copy(tmp_path) as stores:
        for batch in range(crashed_batch, BATCHES):
            run_batch(stores, batch)
        assert snapshot(stores) == reference[0]
    assert restored(tmp_path, BATCHES) == reference[1]


def test_rerun_of_a_locally_committed_batch_is_undone_first(tmp_path, reference):
    with open_copy(tmp_path) as stores:
        for batch in range(BATCHES):
            run_batch(stores, batch)
        ends = changelog_ends(tmp_path)
        run_batch(stores, BATCHES - 1)
        assert snapshot(stores) == reference[0]
        metrics = stores.metrics()
        assert metrics["stores"]["counts"]["undone_batches"] == 1
        assert metrics["stores"]["counts"]["changelog_appends_skipped"] == 1
        assert changelog_ends(tmp_path) == ends
    assert restored(tmp_path, BATCHES) == reference[1]


def test_copy_ahead_of_the_batch_is_dropped_and_restored(tmp_path, reference):
    with open_copy(tmp_path) as stores:
        for batch in range(BATCHES):
            run_batch(stores, batch)
    with open_copy(tmp_path) as stores:     # e.g. the driver restarted from an older checkpoint
        run_batch(stores, BATCHES - 2)
        assert stores.metrics()["stores"]["counts"]["dropped_copies"] == 1
        run_batch(stores, BATCHES - 1)
        assert snapshot(stores) == reference[0]


def test_rerun_on_another_copy_after_a_crash_between_append_and_write(tmp_path, monkeypatch,
                                                                      reference):
    with open_copy(tmp_path) as stores:
        for batch in range(3):
            run_batch(stores, batch)
        crash_at(monkeypatch, "after_append")
        with pytest.raises(Crash):
            run_batch(stores, 3)
        monkeypatch.undo()
    with open_copy(tmp_path, "b") as other:      # Spark retries batch 3 on another executor
        run_batch(other, 3)
    with open_copy(tmp_path) as stores:          # the first copy then gets batch 4
        for batch in range(4, BATCHES):
            run_batch(stores, batch)
        assert snapshot(stores) == reference[0]


KILLED = textwrap.dedent("""
    import os, sys, pathlib
    sys.path.insert(0, sys.argv[2])
    import test_state_replay as t
    from streamlib.state.changelog import Changelog
    real = Changelog.append
    def append(self, *args):
        result = real(self, *args)
        if self.topic == "app-sums-changelog":
            os._exit(17)          # the process dies mid-commit, between the two stores
        return result
    with t.open_copy(pathlib.Path(sys.argv[1])) as stores:
        for batch in range(3):
            t.run_batch(stores, batch)
        Changelog.append = append
        t.run_batch(stores, 3)
""")


def test_process_killed_mid_commit(tmp_path, reference):
    proc = subprocess.run([sys.executable, "-c", KILLED, str(tmp_path), os.path.dirname(__file__)])
    assert proc.returncode == 17
    with open_copy(tmp_path) as stores:
        stores.begin(3)
        assert stores.meta_get("stream_time") == b"2000"
        work(stores, 3)
        stores.commit()
        for batch in range(4, BATCHES):
            run_batch(stores, batch)
        assert snapshot(stores) == reference[0]
    assert restored(tmp_path, BATCHES) == reference[1]
