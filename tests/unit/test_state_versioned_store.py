"""The versioned key-value store over real RocksDB: ``get_as_of`` / ``next_version_after``
(one seek each) against a brute-force model at every boundary, with versions pending in
the batch, committed, expired, and restored from the changelog into an empty state dir;
and the byte store's backward scan the lookups use."""
import random
import shutil

import pytest

from streamlib import Serdes, StreamsConfig
from streamlib.processors.stores import typed_store
from streamlib.state import StoreSpec, open_task_stores
from streamlib.topics import open_backend
from streamlib.topology import StoreDef

CONFIG = StreamsConfig(application_id="app")
HISTORY = 400
VDEF = StoreDef("v", kind="versioned", key_serde=Serdes.string(), value_serde=Serdes.string(),
                retention_ms=HISTORY)
SPECS = [StoreSpec("v", changelog_topic="app-v-changelog")]
# keys that are each other's prefixes: a key's versions must not be read as another's
KEYS = ["A", "AB", "", "B"]


@pytest.fixture
def backend(tmp_path):
    return open_backend(f"local://{tmp_path}/topics?fsync=false")


def open_copy(root, backend, copy="a"):
    return open_task_stores(root / copy / "app" / "0_0", SPECS, backend=backend, partition=0,
                            num_partitions=1, producer_prefix="app", meta_changelog_topic="app-meta")


class Model:
    """Brute force: every version ever put, lookups by scanning them all."""

    def __init__(self):
        self.versions: dict[str, dict[int, object]] = {k: {} for k in KEYS}
        self.observed = -1

    def put(self, key, value, ts) -> bool:
        self.observed = max(self.observed, ts)
        if ts < self.observed - HISTORY:
            return False
        self.versions[key][ts] = value
        return True

    def get_as_of(self, key, ts):
        if ts < self.observed - HISTORY:
            return None
        older = [t for t in self.versions[key] if t <= ts]
        if not older:
            return None
        valid_from = max(older)
        value = self.versions[key][valid_from]
        return None if value is None else (value, valid_from)

    def next_version_after(self, key, ts):
        newer = [t for t in self.versions[key] if t > ts]
        return min(newer) if newer else None

    def probes(self, key):
        """Before the first version, at each, one before and after each, after the last."""
        times = sorted(self.versions[key])
        found = {-10**6, 10**9, self.observed - HISTORY - 1, self.observed - HISTORY}
        for t in times:
            found.update((t - 1, t, t + 1))
        return sorted(found)


def check(store, model):
    for key in KEYS:
        for ts in model.probes(key):
            assert store.get_as_of(key, ts) == model.get_as_of(key, ts), (key, ts)
            if ts >= model.observed - HISTORY:   # expiry only drops versions older than that
                assert store.next_version_after(key, ts) == model.next_version_after(key, ts), (key, ts)


def run_batch(stores, batch, model, rng, puts=60):
    """Random puts (late ones, tombstones, replaced timestamps), checked against the
    model while pending, then after expiry, then committed."""
    stores.begin(batch)
    store = typed_store(VDEF, stores["v"], CONFIG)
    base = batch * 150
    for i in range(puts):
        key = rng.choice(KEYS)
        ts = base + rng.randrange(-300, 200)      # out of order, sometimes too old
        value = None if rng.random() < 0.2 else f"{key}{ts}-{batch}.{i}"
        assert store.put(key, value, ts) == model.put(key, value, ts)
        if i % 20 == 0:
            check(store, model)
    check(store, model)
    store.expire()
    check(store, model)
    store.write_back()
    stores.commit()
    return store


def test_get_as_of_matches_a_brute_force_model_at_every_boundary(tmp_path, backend):
    rng = random.Random(7)
    model = Model()
    with open_copy(tmp_path, backend) as stores:
        for batch in range(8):
            run_batch(stores, batch, model, rng)
        stores.begin(8)
        check(typed_store(VDEF, stores["v"], CONFIG), model)
    shutil.rmtree(tmp_path / "a")
    with open_copy(tmp_path, backend, copy="fresh") as stores:   # restored from the changelog
        stores.begin(8)
        check(typed_store(VDEF, stores["v"], CONFIG), model)


def test_a_key_with_many_versions_and_tombstones(tmp_path, backend):
    """One key, 3000 versions over three batches (more than a RocksDB scan page),
    every fifth a tombstone; lookups before the first, at, between and after each."""
    model = Model()
    with open_copy(tmp_path, backend) as stores:
        for batch in range(3):
            stores.begin(batch)
            store = typed_store(VDEF, stores["v"], CONFIG)
            for i in range(batch * 1000, batch * 1000 + 1000):
                ts = 10**6 + 3 * i            # history covers only the newest ~130 versions
                value = None if i % 5 == 4 else f"v{i}"
                assert store.put("A", value, ts) == model.put("A", value, ts) is True
            store.write_back()
            stores.commit()
        stores.begin(3)
        store = typed_store(VDEF, stores["v"], CONFIG)
        for ts in model.probes("A"):
            assert store.get_as_of("A", ts) == model.get_as_of("A", ts), ts
        last = max(model.versions["A"])
        assert store.get_as_of("A", last) is None                 # the last is a tombstone
        assert store.get_as_of("A", last - 3) == ("v2998", last - 3)
        assert store.get_as_of("A", last + 10**6) is None
        assert store.next_version_after("A", last - 4) == last - 3


@pytest.fixture
def kv(tmp_path):
    opened = open_task_stores(tmp_path / "task", [StoreSpec("s", logging=False)])
    yield opened
    opened.close()


def test_backward_scan_merges_pending_writes_and_spans_pages(kv):
    kv.begin(0)
    kv["s"].put_many([(b"k%05d" % i, b"%d" % i) for i in range(0, 3000, 2)])
    kv.commit()
    kv.begin(1)
    s = kv["s"]
    s.put_many([(b"k%05d" % i, b"new") for i in range(1, 3000, 7)])     # pending puts
    s.put_many([(b"k%05d" % i, None) for i in range(0, 3000, 10)])      # pending deletes
    for lower, upper in [(None, None), (b"k00100", b"k02500"), (b"k00100", b"k00101"),
                         (b"k00101", b"k00102"), (b"k", b"k00000"), (b"k02998", None),
                         (None, b"k00009")]:
        forward = list(s.between(lower, upper))
        assert list(s.between_reversed(lower, upper)) == forward[::-1], (lower, upper)
    kv.commit()
    kv.begin(2)
    assert list(kv["s"].between_reversed(b"k00010", b"k00016")) == [
        (b"k00015", b"new"), (b"k00014", b"14"), (b"k00012", b"12")]
