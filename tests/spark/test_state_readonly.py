"""Read-only views: committed batches only, openable while a writer holds the store."""
import subprocess
import sys
import textwrap
import time

import pytest

from streamlib.state import StoreSpec, open_read_only_store, open_task_stores

SPEC = StoreSpec("counts", logging=False)


def test_view_sees_committed_batches_not_pending_writes(tmp_path):
    with open_task_stores(tmp_path / "task", [SPEC]) as stores:
        stores.begin(0)
        stores["counts"].put_many([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])
        stores.commit()
        stores.begin(1)
        stores["counts"].put(b"a", b"pending")
        with open_read_only_store(tmp_path / "task" / "counts") as view:
            assert view.get(b"a") == b"1" and view.get(b"zz") is None
            assert view.get_many([b"c", b"a"]) == [b"3", b"1"]
            assert list(view.range(b"b", None)) == [(b"b", b"2"), (b"c", b"3")]
            assert list(view.prefix_scan(b"c")) == [(b"c", b"3")]
            assert [k for k, _ in view.all()] == [b"a", b"b", b"c"]
            assert view.approximate_num_entries() == 3
            stores.commit()
            assert view.get(b"a") == b"1"
            view.refresh()
            assert view.get(b"a") == b"pending"


def test_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no state store"):
        open_read_only_store(tmp_path / "nothing")


WRITER = textwrap.dedent("""
    import sys
    from streamlib.state import StoreSpec, open_task_stores
    for batch in range(1, int(sys.argv[2])):
        with open_task_stores(sys.argv[1], [StoreSpec("counts", logging=False)]) as stores:
            stores.begin(batch)
            stores["counts"].put_many([(b"k%04d" % i, b"%d" % batch) for i in range(2000)])
            stores.commit()
""")


def test_views_never_see_half_a_batch_while_a_writer_runs(tmp_path):
    with open_task_stores(tmp_path / "task", [SPEC]) as stores:
        stores.begin(0)
        stores["counts"].put_many([(b"k%04d" % i, b"-1") for i in range(2000)])
        stores.commit()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "task"), "15"])
    seen, reads = set(), 0
    try:
        with open_read_only_store(tmp_path / "task" / "counts") as kept:
            while writer.poll() is None or reads < 5:
                with open_read_only_store(tmp_path / "task" / "counts") as fresh:
                    values = {v for _, v in fresh.all()}
                kept.refresh()
                refreshed = {v for _, v in kept.all()}
                assert len(values) == 1 and len(refreshed) == 1
                seen |= values | refreshed
                reads += 1
                time.sleep(0.005)
    finally:
        writer.wait(timeout=60)
    assert writer.returncode == 0
    assert len(seen) > 2 and b"14" in seen


def test_refresh_follows_a_writer_that_replaced_its_copy(tmp_path):
    with open_task_stores(tmp_path / "task", [SPEC]) as stores:
        for batch in range(3):
            stores.begin(batch)
            stores["counts"].put(b"k%d" % batch, b"old")
            stores.commit()
    with open_read_only_store(tmp_path / "task" / "counts") as view:
        assert len(list(view.all())) == 3
        with open_task_stores(tmp_path / "task", [SPEC]) as stores:
            stores.begin(1)            # the copy is ahead and unlogged: dropped, empty
            stores["counts"].put(b"new", b"v")
            stores.commit()
            assert stores.metrics()["stores"]["counts"]["dropped_copies"] == 1
        view.refresh()
        assert list(view.all()) == [(b"new", b"v")]
