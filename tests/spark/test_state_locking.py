"""One RocksDB per (store, task); a second opener waits for the LOCK, bounded, never corrupts."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from streamlib.state import StoreLockTimeout, StoreSpec, open_task_stores

SPEC = StoreSpec("counts", logging=False)

HOLDER = textwrap.dedent("""
    import sys, time
    from rocksdict import Options, Rdict
    db = Rdict(sys.argv[1], Options(raw_mode=True), column_families={"streamlib": Options(raw_mode=True)})
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    db.close()
""")


def hold_lock(task_dir, seconds):
    """Commit a value, then let another process hold the store's RocksDB LOCK."""
    with open_task_stores(task_dir, [SPEC]) as stores:
        stores.begin(0)
        stores["counts"].put(b"k", b"committed")
        stores.commit()
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(task_dir / "counts"), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_each_store_lives_in_its_own_rocksdb_under_the_task_dir(tmp_path):
    task_dir = tmp_path / "app" / "0_1"
    with open_task_stores(task_dir, [SPEC, StoreSpec("other", logging=False)]) as stores:
        stores.begin(0)
    assert (task_dir / "counts" / "CURRENT").exists() and (task_dir / "other" / "CURRENT").exists()


def test_second_opener_waits_for_the_previous_holder(tmp_path):
    proc = hold_lock(tmp_path / "task", 0.8)
    started = time.monotonic()
    with open_task_stores(tmp_path / "task", [SPEC], lock_timeout=20) as stores:
        waited = time.monotonic() - started
        stores.begin(1)
        assert stores["counts"].get(b"k") == b"committed"
        assert stores.metrics()["stores"]["counts"]["open_seconds"] >= 0.3
    assert proc.wait() == 0
    assert waited >= 0.3


def test_lock_timeout_is_a_clear_error_naming_the_path_and_releases_other_stores(tmp_path):
    proc = hold_lock(tmp_path / "task", 10)
    first = StoreSpec("first", logging=False)
    try:
        with pytest.raises(StoreLockTimeout, match=str(tmp_path / "task" / "counts")):
            open_task_stores(tmp_path / "task", [first, SPEC], lock_timeout=0.3)
        with open_task_stores(tmp_path / "task", [first], lock_timeout=0.3) as stores:
            stores.begin(1)
    finally:
        proc.kill()
        proc.wait()
    with open_task_stores(tmp_path / "task", [SPEC], lock_timeout=5) as stores:
        stores.begin(1)
        assert stores["counts"].get(b"k") == b"committed"


def test_reopen_after_close_in_the_same_process_even_after_partial_scans(tmp_path):
    with open_task_stores(tmp_path / "task", [SPEC]) as stores:
        stores.begin(0)
        stores["counts"].put_many([(b"k%05d" % i, b"v") for i in range(3000)])
        stores.commit()
        unfinished = stores["counts"].all()
        next(unfinished)
    with open_task_stores(tmp_path / "task", [SPEC], lock_timeout=1) as stores:
        stores.begin(1)
        assert stores["counts"].approximate_num_entries() == 3000


def test_closing_twice_is_harmless(tmp_path):
    stores = open_task_stores(tmp_path / "task", [SPEC])
    stores.close()
    stores.close()
    with open_task_stores(tmp_path / "task", [SPEC], lock_timeout=0.5):
        pass


def test_an_interrupted_drop_leaves_no_garbage(tmp_path):
    task_dir = tmp_path / "task"
    os.makedirs(task_dir / "counts.dropped-abc" / "x")
    with open_task_stores(task_dir, [SPEC]):
        pass
    assert sorted(os.listdir(task_dir)) == ["__task_meta", "counts"]


def test_a_pause_ends_when_the_other_process_lets_go_of_the_lock(tmp_path):
    from streamlib.state.rocksdb import _pause, lock_held_elsewhere

    proc = hold_lock(tmp_path / "task", 0.5)
    lock = str(tmp_path / "task" / "counts" / "LOCK")
    assert lock_held_elsewhere(lock)
    started = time.monotonic()
    _pause(60.0, lock)   # would sleep a minute if it did not watch the lock
    assert time.monotonic() - started < 30
    assert proc.wait() == 0 and not lock_held_elsewhere(lock)


def test_a_second_open_in_the_same_process_times_out_and_leaves_the_first_holding_the_lock(tmp_path):
    # The pause must not look at a LOCK this process holds: the descriptor it would
    # open and close to ask would drop the first handle's POSIX lock.
    from streamlib.state.rocksdb import RocksDB

    path = str(tmp_path / "db")
    first = RocksDB.open(path)
    try:
        with pytest.raises(StoreLockTimeout, match="db"):
            RocksDB.open(path, lock_timeout=0.2)
        ask = ("import sys; from streamlib.state.rocksdb import lock_held_elsewhere; "
               "print(lock_held_elsewhere(sys.argv[1]))")
        out = subprocess.run([sys.executable, "-c", ask, os.path.join(path, "LOCK")], capture_output=True,
                             text=True, check=True).stdout
        assert out.strip() == "True"
    finally:
        first.close()
