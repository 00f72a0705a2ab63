"""StoreCache: a task's stores stay open between batches of one process, and are handed
over (closed by the holder) as soon as another process wants them."""
import os
import shutil
import subprocess
import sys
import textwrap
import time

from streamlib.state import StoreSpec, open_task_stores
from streamlib.state.cache import StoreCache
from streamlib.state.rocksdb import lock_held_elsewhere
from streamlib.state.task import RELEASE_REQUEST

SPEC = StoreSpec("counts", logging=False)

# A process that commits a batch through its own cache, keeps the stores cached (a
# long lease), and reports how many entries its cache has once asked on stdin.
HOLDER = textwrap.dedent("""
    import sys, time
    from streamlib.state import StoreSpec, open_task_stores
    from streamlib.state.cache import StoreCache
    task_dir = sys.argv[1]
    cache = StoreCache(lease=60.0)
    spec = [StoreSpec("counts", logging=False)]
    stores = cache.acquire(task_dir, "k", lambda: open_task_stores(task_dir, spec))
    stores.begin(0)
    stores["counts"].put(b"k", b"from-holder")
    stores.commit()
    cache.release(task_dir, "k", stores)
    print("cached", flush=True)
    sys.stdin.readline()
    print(len(cache), flush=True)
""")


def opener(task_dir):
    return lambda: open_task_stores(task_dir, [SPEC])


def commit(stores, batch, key, value):
    stores.begin(batch)
    stores["counts"].put(key, value)
    stores.commit()


def test_next_batch_in_the_same_process_reuses_the_open_stores(tmp_path):
    cache = StoreCache(lease=60.0)
    task_dir = str(tmp_path / "0_0")
    first = cache.acquire(task_dir, "k", opener(task_dir))
    commit(first, 0, b"a", b"1")
    cache.release(task_dir, "k", first)
    second = cache.acquire(task_dir, "k", opener(task_dir))
    try:
        assert second is first and (cache.hits, cache.misses) == (1, 1)
        second.begin(1)
        assert second["counts"].get(b"a") == b"1"
        assert second.metrics()["puts"] == 0  # counters restart per batch, as after an open
    finally:
        cache.discard(second)


def test_changed_specs_or_a_recreated_copy_are_opened_afresh(tmp_path):
    cache = StoreCache(lease=60.0)
    task_dir = str(tmp_path / "0_0")
    stores = cache.acquire(task_dir, "k", opener(task_dir))
    commit(stores, 0, b"a", b"1")
    cache.release(task_dir, "k", stores)
    other = cache.acquire(task_dir, "other-specs", opener(task_dir))
    assert other is not stores and other.paths() == stores.paths()
    cache.release(task_dir, "k", other)
    shutil.rmtree(task_dir)  # lost state (cleanup, a new disk) while the copy is cached
    fresh = cache.acquire(task_dir, "k", opener(task_dir))
    try:
        assert fresh is not other
        fresh.begin(1)
        assert fresh["counts"].get(b"a") is None
    finally:
        cache.discard(fresh)


def test_idle_entries_close_after_the_lease(tmp_path):
    cache = StoreCache(lease=0.05)
    task_dir = str(tmp_path / "0_0")
    stores = cache.acquire(task_dir, "k", opener(task_dir))
    commit(stores, 0, b"a", b"1")
    cache.release(task_dir, "k", stores)
    deadline = time.monotonic() + 5
    while len(cache) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(cache) == 0
    with open_task_stores(task_dir, [SPEC], lock_timeout=1) as reopened:  # the LOCK is free
        reopened.begin(1)
        assert reopened["counts"].get(b"a") == b"1"


def test_a_batch_that_ends_while_another_process_waits_closes_instead_of_caching(tmp_path):
    cache = StoreCache(lease=60.0)
    task_dir = tmp_path / "0_0"
    stores = cache.acquire(str(task_dir), "k", opener(task_dir))
    commit(stores, 0, b"a", b"1")
    (task_dir / RELEASE_REQUEST).touch()
    cache.release(str(task_dir), "k", stores)
    assert len(cache) == 0
    (task_dir / RELEASE_REQUEST).unlink()
    with open_task_stores(task_dir, [SPEC], lock_timeout=1) as reopened:
        reopened.begin(1)
        assert reopened["counts"].get(b"a") == b"1"


def test_another_process_gets_cached_stores_at_once_and_sees_the_committed_batch(tmp_path):
    task_dir = tmp_path / "0_0"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(task_dir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "cached"
        started = time.monotonic()
        # Without the hand-over this waits for the holder's 60 s lease and times out.
        with open_task_stores(task_dir, [SPEC], lock_timeout=10) as stores:
            waited = time.monotonic() - started
            stores.begin(1)
            assert stores["counts"].get(b"k") == b"from-holder"
        assert waited < 5
        assert not (task_dir / RELEASE_REQUEST).exists()
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "0"  # the holder dropped its entry, alive
    finally:
        holder.kill()
        holder.wait()


def test_a_cached_copy_writes_its_memtables_to_disk_in_the_background(tmp_path):
    # so that the close a hand-over waits for has nothing left to flush
    cache = StoreCache(lease=60.0)
    task_dir = tmp_path / "0_0"
    stores = cache.acquire(str(task_dir), "k", opener(task_dir))
    commit(stores, 0, b"a", b"1")
    assert not list((task_dir / "counts").glob("*.sst"))   # only in the memtable and the WAL
    cache.release(str(task_dir), "k", stores)
    deadline = time.monotonic() + 10
    while len(list((task_dir / "counts").glob("*.sst"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert len(list((task_dir / "counts").glob("*.sst"))) == 2   # the data and the bookkeeping
        again = cache.acquire(str(task_dir), "k", opener(task_dir))
        assert again is stores
        again.begin(1)
        assert again["counts"].get(b"a") == b"1"
    finally:
        cache.discard(stores)


def test_an_early_request_frees_other_processes_stores_and_leaves_this_ones_cached(tmp_path):
    elsewhere, here = tmp_path / "0_0", tmp_path / "0_1"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(elsewhere)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    cache = StoreCache(lease=60.0)
    mine = cache.acquire(str(here), "k", opener(here))
    commit(mine, 0, b"a", b"1")
    cache.release(str(here), "k", mine)
    try:
        assert holder.stdout.readline().strip() == "cached"
        cache.request_release([str(elsewhere), str(here), str(tmp_path / "0_2")])
        assert (elsewhere / RELEASE_REQUEST).exists()
        assert not (here / RELEASE_REQUEST).exists() and not (tmp_path / "0_2").exists()
        deadline = time.monotonic() + 10
        while lock_held_elsewhere(str(elsewhere / "counts" / "LOCK")) and time.monotonic() < deadline:
            time.sleep(0.01)   # the holder's reaper looks every few milliseconds
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "0"   # closed before anyone waited
        with open_task_stores(elsewhere, [SPEC], lock_timeout=0.5) as stores:
            stores.begin(1)
            assert stores["counts"].get(b"k") == b"from-holder"
        assert not (elsewhere / RELEASE_REQUEST).exists()   # answered: removed by the opener
        assert cache.acquire(str(here), "k", opener(here)) is mine
    finally:
        holder.kill()
        holder.wait()
        cache.discard(mine)


def test_release_everywhere_empties_other_processes_caches_and_frees_the_locks(tmp_path):
    from streamlib.state.cache import release_everywhere

    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "app" / "0_0")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "cached"
        assert release_everywhere(str(tmp_path / "app"), timeout=10)
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "0"
        assert not (tmp_path / "app" / "0_0" / RELEASE_REQUEST).exists()
        shutil.rmtree(tmp_path / "app")  # now safe: nobody holds a handle on these files
    finally:
        holder.kill()
        holder.wait()
    assert release_everywhere(str(tmp_path / "missing"))


# A process whose cache still holds a task's stores when it exits normally; an exit
# hook registered before the cache's own (hooks run last-registered first) reports what
# the cache left to the interpreter's finalization.
EXITING = textwrap.dedent("""
    import atexit, sys
    def report():
        from streamlib.state.cache import STORE_CACHE
        reaper = STORE_CACHE._reaper
        print(len(STORE_CACHE), reaper is not None and reaper.is_alive(), flush=True)
    atexit.register(report)
    from streamlib.state import StoreSpec, open_task_stores
    from streamlib.state.cache import STORE_CACHE
    task_dir = sys.argv[1]
    stores = STORE_CACHE.acquire(task_dir, "k", lambda: open_task_stores(task_dir, [StoreSpec("counts", logging=False)]))
    stores.begin(0)
    stores["counts"].put(b"k", b"v")
    stores.commit()
    STORE_CACHE.release(task_dir, "k", stores)
""")


def test_a_normal_exit_stops_the_reaper_and_closes_the_cached_stores_first(tmp_path):
    # Left to finalization, the open handles and the polling reaper made about one exit
    # in six abort or segfault (a process that ran tasks itself, outside Spark's workers).
    done = subprocess.run([sys.executable, "-c", EXITING, str(tmp_path / "0_0")], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "STREAMLIB_STORE_LEASE": "600"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "False"]
    reopened = open_task_stores(str(tmp_path / "0_0"), [SPEC])  # the LOCK is free, the batch kept
    try:
        reopened.begin(1)
        assert reopened["counts"].get(b"k") == b"v"
    finally:
        reopened.close()


def test_a_failing_close_neither_stops_the_reaper_nor_keeps_other_entries_open(tmp_path, caplog):
    cache = StoreCache(lease=0.2)
    broken_dir, other_dir = str(tmp_path / "0_0"), str(tmp_path / "0_1")
    broken = cache.acquire(broken_dir, "k", opener(broken_dir))
    commit(broken, 0, b"a", b"1")
    closes = []

    def failing_close():
        closes.append("broken")
        raise OSError("IO error: gone")

    broken.close = failing_close
    cache.release(broken_dir, "k", broken)
    deadline = time.monotonic() + 10
    while not closes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert closes == ["broken"] and len(cache) == 0
    other = cache.acquire(other_dir, "k", opener(other_dir))
    commit(other, 0, b"b", b"2")
    cache.release(other_dir, "k", other)
    while len(cache) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(cache) == 0   # the reaper lived on and closed the next idle entry
    assert cache._reaper.is_alive()
    assert "IO error: gone" in caplog.text
    cache.shutdown()
    assert cache._reaper is None


def test_task_stores_close_every_store_when_one_fails(tmp_path):
    stores = open_task_stores(str(tmp_path / "0_0"), [SPEC, StoreSpec("other", logging=False)])
    first = stores._all()[0]
    real_close = first.close

    def close_then_fail():
        real_close()
        raise OSError("IO error: gone")

    first.close = close_then_fail
    try:
        stores.close()
    except OSError as exc:
        assert "gone" in str(exc)
    else:
        raise AssertionError("the store's error was swallowed")
    # every LOCK is free: the same process opens the copy again
    open_task_stores(str(tmp_path / "0_0"), [SPEC, StoreSpec("other", logging=False)]).close()
