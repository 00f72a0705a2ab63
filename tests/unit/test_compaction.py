"""Compaction of the embedded log runs by itself past a dirty ratio and keeps
tombstones for ``delete.retention.ms`` (issue 11, item 5; DESIGN.md "Topics")."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from streamlib.state import StoreSpec, open_task_stores
from streamlib.topics import APPEND_SCHEMA, open_backend
from streamlib.topics.local import LocalBackend

TOPIC = "app-counts-changelog"
DAY_MS = 24 * 60 * 60 * 1000


def _updates(start: int, n: int, keys: int) -> pa.Table:
    i = np.arange(start, start + n)
    key = pa.array([b"key-%04d" % k for k in i % keys], pa.binary())
    value = pa.array([b"%d" % v for v in i], pa.binary())
    headers = pa.array([[]] * n, APPEND_SCHEMA.field("headers").type)
    return pa.table([pa.array(i, pa.int64()), key, value, headers], schema=APPEND_SCHEMA)


def _disk_bytes(path) -> int:
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path))


def test_a_million_updates_to_a_thousand_keys_keep_the_changelog_small(tmp_path):
    backend = open_backend(f"local://{tmp_path}?fsync=false")
    backend.create_topic(TOPIC, 1, {"cleanup.policy": "compact"})
    chunk = 20_000
    for start in range(0, 1_000_000, chunk):
        backend.append(TOPIC, 0, _updates(start, chunk, 1000))
    stored = backend.read_arrow(TOPIC, 0, 0, 1_000_000)
    assert backend.end_offsets(TOPIC) == {0: 1_000_000}  # offsets are kept
    assert stored.num_rows < 150_000, "compaction ran by itself"
    assert _disk_bytes(tmp_path / TOPIC / "0") < 4 << 20
    latest = dict(zip(stored.column("key").to_pylist(), stored.column("value").to_pylist()))
    assert latest == {b"key-%04d" % k: b"%d" % (999_000 + k) for k in range(1000)}


def test_a_topic_without_compact_policy_never_compacts_by_itself(tmp_path):
    backend = open_backend(f"local://{tmp_path}?fsync=false")
    backend.create_topic("plain", 1)
    for start in range(0, 200_000, 20_000):
        backend.append("plain", 0, _updates(start, 20_000, 10))
    assert backend.read_arrow("plain", 0, 0, 200_000).num_rows == 200_000


def _tombstones(keys: list[bytes]) -> pa.Table:
    n = len(keys)
    return pa.table([pa.array([1] * n, pa.int64()), pa.array(keys, pa.binary()), pa.array([None] * n, pa.binary()),
                     pa.array([[]] * n, APPEND_SCHEMA.field("headers").type)], schema=APPEND_SCHEMA)


def test_tombstones_stay_for_delete_retention_then_go(tmp_path):
    backend = LocalBackend(str(tmp_path), fsync=False)
    backend.create_topic(TOPIC, 1, {"cleanup.policy": "compact"})
    backend.append(TOPIC, 0, _updates(0, 10, 10))
    backend.append(TOPIC, 0, _tombstones([b"key-0003"]))
    log = backend._log(TOPIC, 0)
    log.compact(now_ms=1_000)
    assert (10, b"key-0003", None) in [(r.offset, r.key, r.value) for r in backend.read(TOPIC, 0, 0, 20)]
    log.compact(now_ms=1_000 + DAY_MS - 1)
    assert any(r.value is None for r in backend.read(TOPIC, 0, 0, 20)), "kept within a day"
    log.compact(now_ms=1_000 + DAY_MS)
    kept = backend.read(TOPIC, 0, 0, 20)
    assert [r.key for r in kept] == [b"key-%04d" % k for k in range(10) if k != 3]
    assert backend.end_offsets(TOPIC) == {0: 11}


def test_a_stale_store_copy_catching_up_across_a_compaction_still_sees_the_deletes(tmp_path):
    backend = open_backend(f"local://{tmp_path}/topics?fsync=false")
    spec = StoreSpec("counts", changelog_topic=TOPIC)

    def copy(name):
        return open_task_stores(tmp_path / name / "app" / "0_0", [spec], backend=backend, partition=0,
                                num_partitions=1, producer_prefix="app")

    with copy("a") as a:
        a.begin(0)
        a["counts"].put_many([(b"k%d" % i, b"0") for i in range(100)])
        a.commit()
    with copy("b") as stale:  # another executor's copy, current as of batch 0
        stale.begin(1)
        stale.close()
    with copy("a") as a:
        a.begin(1)
        a["counts"].put_many([(b"k%d" % i, None) for i in range(50)])  # deletes
        a.commit()
        for batch in range(2, 40):
            a.begin(batch)
            a["counts"].put_many([(b"k%d" % i, b"%d" % batch) for i in range(50, 100)])
            a.commit()
        expected = list(a["counts"].all())
    backend._log(TOPIC, 0).compact()
    assert backend.read_arrow(TOPIC, 0, 0, 10_000).num_rows < 200, "compacted"
    with copy("b") as stale:
        stale.begin(40)
        assert list(stale["counts"].all()) == expected
