"""Window and session stores over real RocksDB: reads with pending writes, ranges and
boundaries, commit/reopen, changelog restore, undo of a re-run batch, expiry, query views
over several task copies, and changelog timestamps."""
import shutil

import pytest

from streamlib import Serdes, StreamsConfig
from streamlib.processors.stores import (SessionStoreView, TimestampedKeyValueStore, entries_per_record,
                                         TimestampedWindowStore, WindowStoreView, query_view,
                                         typed_store)
from streamlib.processors.stores.layout import INDEX_TAG, SESSIONS, WINDOWS
from streamlib.state import StoreSpec, open_task_stores
from streamlib.state.partitioned import PartitionedReadOnlyStore
from streamlib.topics import open_backend
from streamlib.topology import StoreDef
from streamlib.windows import Window, Windowed

S, L = Serdes.string(), Serdes.long()
CONFIG = StreamsConfig(application_id="app")
SIZE = 100
WDEF = StoreDef("w", kind="window", key_serde=S, value_serde=L, window_size_ms=SIZE, retention_ms=500)
SDEF = StoreDef("s", kind="session", key_serde=S, value_serde=L, retention_ms=500)
KDEF = StoreDef("k", kind="kv", key_serde=S, value_serde=L)
SPECS = [StoreSpec(d.name, changelog_topic=f"app-{d.name}-changelog") for d in (WDEF, SDEF, KDEF)]


@pytest.fixture
def backend(tmp_path):
    return open_backend(f"local://{tmp_path}/topics?fsync=false")


def open_copy(root, backend, copy="a", partition=0, num_partitions=1):
    return open_task_stores(root / copy / "app" / f"0_{partition}", SPECS, backend=backend,
                            partition=partition, num_partitions=num_partitions,
                            producer_prefix="app", meta_changelog_topic="app-meta")


def begin(stores, batch):
    """Begin a batch; the typed stores as the task runtime builds them."""
    stores.begin(batch)
    return typed_store(WDEF, stores["w"], CONFIG), typed_store(SDEF, stores["s"], CONFIG)


def commit(stores, *typed):
    for store in typed:
        store.write_back()
    stores.commit()


def raw(stores, name):
    return list(stores[name].all())


def assert_index_matches_data(stores, name, layout):
    """Every data entry has exactly its index entry and nothing else is stored."""
    entries = raw(stores, name)
    data = {k for k, _ in entries if k[:1] == layout.tag}
    index = {k for k, v in entries if k[:1] == INDEX_TAG}
    assert len(data) + len(index) == len(entries)
    assert {layout.index_to_data(k) for k in index} == data
    assert all(v == b"" for k, v in entries if k[:1] == INDEX_TAG)


# -- window store ---------------------------------------------------------------------------

def test_window_fetch_ranges_boundaries_and_prefix_keys_before_and_after_commit(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        w, _ = begin(stores, 0)
        assert isinstance(w, TimestampedWindowStore) and w.window_size_ms == SIZE
        for start in (0, 100, 200, 300):
            w.put("a", start, start // 100 + 1, timestamp=start + 5)
        w.put("ab", 100, 10, timestamp=150)
        w.put("", 100, 20, timestamp=160)

        def check():
            assert w.get("a", 100) == (2, 105) and w.get("a", 50) is None and w.get("b", 100) is None
            assert w.fetch("a", 100, 200) == [(100, 2, 105), (200, 3, 205)]
            assert w.fetch("a", 101, 199) == [] and w.fetch("a", 300, 300) == [(300, 4, 305)]
            assert [s for s, _, _ in w.fetch("a", -1000, 10_000)] == [0, 100, 200, 300]
            assert w.fetch("ab", 0, 1000) == [(100, 10, 150)]
            assert w.fetch_all(100, 200) == [
                (Windowed("", Window(100, 200)), 20, 160), (Windowed("a", Window(100, 200)), 2, 105),
                (Windowed("ab", Window(100, 200)), 10, 150), (Windowed("a", Window(200, 300)), 3, 205)]
            assert len(w.fetch_all()) == 6

        check()                       # pending writes only
        commit(stores, w)
        w, _ = begin(stores, 1)
        check()                       # from RocksDB
        w.put("a", 200, None, timestamp=400)      # delete a stored window
        w.put("a", 250, 9, timestamp=401)         # a new one between stored ones
        w.put("ab", 100, 11, timestamp=402)       # overwrite
        merged = [(0, 1, 5), (100, 2, 105), (250, 9, 401), (300, 4, 305)]
        assert w.fetch("a", 0, 300) == merged
        assert [(x.key, x.window.start, v) for x, v, _ in w.fetch_all(100, 250)] == [
            ("", 100, 20), ("a", 100, 2), ("ab", 100, 11), ("a", 250, 9)]
        commit(stores, w)
        assert_index_matches_data(stores, "w", WINDOWS)
    with open_copy(tmp_path, backend) as stores:   # reopened
        w, _ = begin(stores, 2)
        assert w.fetch("a", 0, 300) == merged
        view = query_view(WDEF, stores["w"], CONFIG)
        assert isinstance(view, WindowStoreView)
        assert view.fetch("a", 100, 300) == [(100, 2), (250, 9), (300, 4)]
        assert view.fetch("ab", 0, 99) == []
        assert [(x.key, x.window, v) for x, v in view.all()] == [
            ("", Window(100, 200), 20), ("a", Window(0, 100), 1), ("a", Window(100, 200), 2),
            ("a", Window(250, 350), 9), ("a", Window(300, 400), 4), ("ab", Window(100, 200), 11)]


def test_negative_and_extreme_times_order_numerically(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        w, _ = begin(stores, 0)
        for start in (5, -5, 0, -(1 << 62), 1 << 62):
            w.put("k", start, start, timestamp=0)
        commit(stores, w)
        w, _ = begin(stores, 1)
        assert [s for s, _, _ in w.fetch("k", -(1 << 63), (1 << 63) - 1)] == [
            -(1 << 62), -5, 0, 5, 1 << 62]
        assert [s for s, _, _ in w.fetch("k", -5, 0)] == [-5, 0]


def test_fetch_all_and_all_order_by_key_bytes_not_key_length(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        w, s = begin(stores, 0)
        for key in ("b", "ab"):
            w.put(key, 0, 1, timestamp=0)
            s.put(key, Window(0, 0), 1, timestamp=0)
        w.put("c", 0, 1, timestamp=0)
        stored_order = ["ab", "b", "c"]
        assert [x.key for x, _, _ in w.fetch_all(0, 0)] == stored_order
        commit(stores, w, s)
        w, s = begin(stores, 1)
        w.put("aa", 0, 1, timestamp=0)
        assert [x.key for x, _, _ in w.fetch_all(0, 0)] == ["aa", "ab", "b", "c"]
        assert [x.key for x, _, _ in s.fetch_all()] == ["ab", "b"]
        assert [x.key for x, _ in query_view(WDEF, stores["w"], CONFIG).all()] == stored_order
        assert [x.key for x, _ in query_view(SDEF, stores["s"], CONFIG).all()] == ["ab", "b"]


def test_window_expire_drops_exactly_the_expired_windows_scanning_only_them(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        w, _ = begin(stores, 0)
        for start in range(0, 1000, 100):
            for key in ("a", "ab"):
                w.put(key, start, start, timestamp=start)
        commit(stores, w)
        w, _ = begin(stores, 1)
        w.put("b", 150, 1, timestamp=150)          # pending, expires
        w.put("b", 950, 1, timestamp=950)          # pending, stays
        scanned = []
        real_between = stores["w"].between

        def between(lower, upper):
            for key, value in real_between(lower, upper):
                scanned.append(key)
                yield key, value
        stores["w"].between = between
        w.expire(450)
        assert len(scanned) == 10                  # the index entries of the 10 expired windows
        w.expire(450)
        w.expire(300)
        assert len(scanned) == 10                  # nothing new to look at
        w.expire(550)
        assert len(scanned) == 12                  # only [450, 550)
        assert [s for s, _, _ in w.fetch("a", 0, 1000)] == [600, 700, 800, 900]
        assert [x.key for x, _, _ in w.fetch_all(0, 599)] == []
        assert w.fetch("b", 0, 1000) == [(950, 1, 950)]
        w.put("c", 100, 1, timestamp=100)           # a late put is expired by the next call
        w.expire(550)
        assert w.fetch("c", 0, 1000) == []
        commit(stores, w)
        assert_index_matches_data(stores, "w", WINDOWS)
        assert len(raw(stores, "w")) == 2 * (2 * 4 + 1)
        assert query_view(WDEF, stores["w"], CONFIG).approximate_num_entries() in range(9, 12)


# -- session store --------------------------------------------------------------------------

def test_session_find_fetch_remove_in_end_then_start_order(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        _, s = begin(stores, 0)
        s.put("a", Window(0, 10), 1, timestamp=10)
        s.put("a", Window(20, 30), 2, timestamp=30)
        s.put("a", Window(5, 30), 3, timestamp=30)
        s.put("a", Window(40, 40), 4, timestamp=40)
        s.put("ab", Window(5, 25), 5, timestamp=25)

        def check():
            assert [(w.start, w.end, agg) for w, agg, _ in s.fetch_sessions("a")] == [
                (0, 10, 1), (5, 30, 3), (20, 30, 2), (40, 40, 4)]
            assert [w for w, _, _ in s.find_sessions("a", earliest_end=10, latest_start=20)] == [
                Window(0, 10), Window(5, 30), Window(20, 30)]
            assert s.find_sessions("a", earliest_end=31, latest_start=39) == []
            assert [w for w, _, _ in s.find_sessions("a", 40, 40)] == [Window(40, 40)]
            assert s.fetch_sessions("ab") == [(Window(5, 25), 5, 25)]
            assert s.get("a", Window(5, 30)) == (3, 30) and s.get("a", Window(5, 31)) is None

        check()
        commit(stores, s)
        _, s = begin(stores, 1)
        check()
        s.remove("a", Window(5, 30), timestamp=50)
        s.put("a", Window(0, 10), None, timestamp=50)
        s.put("a", Window(20, 45), 6, timestamp=45)
        assert [w for w, _, _ in s.fetch_sessions("a")] == [Window(20, 30), Window(40, 40), Window(20, 45)]
        commit(stores, s)
        assert_index_matches_data(stores, "s", SESSIONS)
    with open_copy(tmp_path, backend) as stores:
        _, s = begin(stores, 2)
        view = query_view(SDEF, stores["s"], CONFIG)
        assert isinstance(view, SessionStoreView)
        expected = [(Windowed("a", Window(20, 30)), 2), (Windowed("a", Window(40, 40)), 4),
                    (Windowed("a", Window(20, 45)), 6)]
        assert view.fetch_sessions("a") == expected == view.fetch("a")
        assert view.all() == expected + [(Windowed("ab", Window(5, 25)), 5)]
        assert view.find_sessions("a", 35, 30) == [(Windowed("a", Window(20, 45)), 6)]


def test_session_created_and_merged_away_in_one_batch_leaves_no_changelog_record(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        _, s = begin(stores, 0)
        s.put("a", Window(0, 0), 1, timestamp=0)
        s.remove("a", Window(0, 0), timestamp=5)
        s.put("a", Window(0, 5), 2, timestamp=5)
        commit(stores, s)
    records = backend.read("app-s-changelog", 0, 0, 100)
    assert len(records) == 2 and all(r.timestamp == 5 for r in records)


def test_session_expire_by_end(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        _, s = begin(stores, 0)
        for i in range(10):
            s.put("a", Window(i * 100, i * 100 + 50), i, timestamp=i * 100 + 50)
        s.put("ab", Window(0, 420), 99, timestamp=420)
        commit(stores, s)
        _, s = begin(stores, 1)
        s.expire(450, timestamp=900)               # drops sessions ending before 450
        assert [w.end for w, _, _ in s.fetch_sessions("a")] == [450, 550, 650, 750, 850, 950]
        assert s.fetch_sessions("ab") == []
        commit(stores, s)
        assert_index_matches_data(stores, "s", SESSIONS)
        assert len(raw(stores, "s")) == 12
    tombstones = [r for r in backend.read("app-s-changelog", 0, 0, 1000) if r.value is None]
    assert len(tombstones) == 2 * 5 and all(r.timestamp == 900 for r in tombstones)


# -- change-logging, restore, undo ----------------------------------------------------------

def work(stores, batch):
    """A batch that reads, writes, deletes and expires in both stores."""
    w, s = begin(stores, batch)
    for i in range(6):
        key = "k%d" % ((batch + i) % 4)
        start = (batch * 3 + i) * 50
        old = w.get(key, start)
        w.put(key, start, (old[0] if old else 0) + i, timestamp=start)
        found = s.find_sessions(key, start - 100, start + 100)
        total = sum(agg for _, agg, _ in found) + 1
        for window, _, _ in found:
            s.remove(key, window, timestamp=start)
        lo = min([start, *(win.start for win, _, _ in found)])
        s.put(key, Window(lo, max([start, *(win.end for win, _, _ in found)])), total, timestamp=start)
    w.expire(batch * 100 - 300, timestamp=batch * 100)
    s.expire(batch * 100 - 300, timestamp=batch * 100)
    commit(stores, w, s)


def snapshot(stores):
    return raw(stores, "w"), raw(stores, "s")


def test_restore_into_an_empty_state_dir_and_undo_of_a_rerun_batch(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        for batch in range(5):
            work(stores, batch)
        before_last = snapshot(stores)
        work(stores, 5)
        final = snapshot(stores)
        assert final != before_last and all(final)
        assert_index_matches_data(stores, "w", WINDOWS)
        assert_index_matches_data(stores, "s", SESSIONS)
        begin(stores, 5)                          # batch 5 re-runs: it is undone first
        assert snapshot(stores) == before_last
        stores.close()
    with open_copy(tmp_path, backend) as stores:
        work(stores, 5)                           # the re-run
        assert snapshot(stores) == final
    shutil.rmtree(tmp_path / "a")
    with open_copy(tmp_path, backend, copy="fresh") as stores:
        begin(stores, 6)
        assert snapshot(stores) == final
        w, s = begin(stores, 6)
        assert [x for x, _, _ in w.fetch_all()] == [
            x for x, _ in query_view(WDEF, stores["w"], CONFIG).fetch_all()]


def test_changelog_records_carry_the_records_timestamps(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        w, s = begin(stores, 0)
        k = typed_store(KDEF, stores["k"], CONFIG)
        assert isinstance(k, TimestampedKeyValueStore)
        w.put("a", 0, 1, timestamp=17)
        w.put("a", 100, 2, timestamp=117)
        s.put("a", Window(3, 9), 3, timestamp=9)
        k.put("x", 1, 21)
        k.put("y", 2, 22)
        commit(stores, w, s, k)
        w, s = begin(stores, 1)
        k = typed_store(KDEF, stores["k"], CONFIG)
        w.put("a", 0, 5, timestamp=30)            # an update: the index entry stays as it is
        k.put("y", None, 23)                      # a tombstone carries its record's timestamp too
        commit(stores, w, k)
    assert [(r.key, r.timestamp) for r in backend.read("app-w-changelog", 0, 4, 10)] == [
        (WINDOWS.data_key(b"a", (0,)), 30)]
    stamps = {t: [(r.key, r.timestamp) for r in backend.read(f"app-{t}-changelog", 0, 0, 4)]
              for t in "wsk"}
    assert sorted(ts for _, ts in stamps["w"]) == [17, 17, 117, 117]
    assert {ts for key, ts in stamps["w"] if key == WINDOWS.data_key(b"a", (100,))} == {117}
    assert sorted(ts for _, ts in stamps["s"]) == [9, 9]
    assert stamps["k"] == [(b"x", 21), (b"y", 22), (b"y", 23)]


def test_put_many_takes_one_timestamp_per_item(tmp_path, backend):
    with open_copy(tmp_path, backend) as stores:
        stores.begin(0)
        kv = stores["k"]
        kv.put_many([(b"a", b"1"), (b"b", b"2")], timestamps=[5, 6])
        with pytest.raises(ValueError, match="2 timestamps for 1 items"):
            kv.put_many([(b"c", b"3")], timestamps=[1, 2])
        with pytest.raises(ValueError, match="not both"):
            kv.put_many([(b"c", b"3")], timestamp=1, timestamps=[1])
        stores.commit()
    assert [(r.key, r.timestamp) for r in backend.read("app-k-changelog", 0, 0, 10)] == [
        (b"a", 5), (b"b", 6)]


# -- query views over several task copies ---------------------------------------------------

def test_query_views_over_two_task_copies(tmp_path, backend):
    copies = [open_copy(tmp_path, backend, partition=p, num_partitions=2) for p in (0, 1)]
    try:
        for p, stores in enumerate(copies):
            w, s = begin(stores, 0)
            for key in (["a", "c"] if p == 0 else ["ab", "b"]):
                for start in (0, 100, 200):
                    w.put(key, start, start + p, timestamp=start)
                s.put(key, Window(10 * p, 10 * p + 5), p, timestamp=5)
            commit(stores, w, s)

        def paths(name):
            return lambda: sorted(str(tmp_path / "a" / "app" / f"0_{p}" / name) for p in (0, 1))

        wv = query_view(WDEF, PartitionedReadOnlyStore(paths("w")), CONFIG)
        sv = query_view(SDEF, PartitionedReadOnlyStore(paths("s")), CONFIG)
        assert wv.fetch("a", 100, 200) == [(100, 100), (200, 200)]
        assert wv.fetch("ab", 0, 100) == [(0, 1), (100, 101)]
        assert [(x.key, x.window.start) for x, _ in wv.fetch_all(100, 100)] == [
            ("a", 100), ("ab", 100), ("b", 100), ("c", 100)]
        assert [x.key for x, _ in wv.all()] == ["a"] * 3 + ["ab"] * 3 + ["b"] * 3 + ["c"] * 3
        assert wv.approximate_num_entries() == 12
        assert sv.fetch_sessions("b") == [(Windowed("b", Window(10, 15)), 1)]
        assert [x.key for x, _ in sv.all()] == ["a", "ab", "b", "c"]
        assert sv.approximate_num_entries() == 4
        w, _ = begin(copies[0], 1)                 # a later batch shows after its commit
        w.put("a", 300, 7, timestamp=300)
        assert wv.fetch("a", 300, 300) == []
        commit(copies[0], w)
        assert wv.fetch("a", 300, 300) == [(300, 7)]
        wv._store.close()
        sv._store.close()
    finally:
        for stores in copies:
            stores.close()


def test_metrics_count_windows_and_sessions_not_their_index_entries(tmp_path):
    """``entries`` (what ``app.metrics()["store_sizes"]`` sums) counts user records."""
    specs = [StoreSpec(d.name, logging=False, entries_per_record=entries_per_record(d.kind))
             for d in (WDEF, SDEF, KDEF)]
    with open_task_stores(tmp_path / "t", specs) as stores:
        w, s = begin(stores, 0)
        k = typed_store(KDEF, stores["k"], CONFIG)
        for start in range(0, 500, SIZE):
            w.put("a", start, 1, start)
        w.put("b", 0, 1, 0)
        s.put("a", Window(0, 10), 7, timestamp=10)
        k.put("a", 1, 0)
        commit(stores, w, s, k)
        assert len(raw(stores, "w")) == 12            # data + time index per window
        sizes = {name: m["entries"] for name, m in stores.metrics()["stores"].items()}
        assert sizes == {"w": 6, "s": 1, "k": 1, "__task_meta": 0}
