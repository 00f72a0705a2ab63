"""Change-logging: one idempotent append per commit, final value per key, batch headers."""
import shutil

import pyarrow as pa
import pytest

from streamlib.state import StoreSpec, open_task_stores
from streamlib.topics import open_backend

TOPIC = "app-counts-changelog"
SPEC = StoreSpec("counts", changelog_topic=TOPIC)


@pytest.fixture
def backend(tmp_path):
    return open_backend(f"local://{tmp_path}/topics?fsync=false")


def open_stores(tmp_path, backend, specs=(SPEC,), **kwargs):
    return open_task_stores(tmp_path / "state" / "app" / "0_1", list(specs), backend=backend,
                            partition=1, num_partitions=3, producer_prefix="app", **kwargs)


def batch_header(batch_id):
    return (("streamlib.batch", batch_id.to_bytes(8, "big")),)


def test_commit_appends_the_final_value_per_changed_key(tmp_path, backend):
    with open_stores(tmp_path, backend) as stores:
        stores.begin(6)
        stores["counts"].put(b"d", b"1")
        stores.commit()
        stores.begin(7)
        kv = stores["counts"]
        kv.put(b"a", b"1", timestamp=100)
        kv.put(b"a", b"2", timestamp=200)
        kv.put(b"b", b"1")
        kv.put(b"c", b"1", timestamp=300)
        kv.delete(b"c")
        kv.delete(b"d")
        kv.delete(b"e")
        stores.commit()
    info = backend.describe_topic(TOPIC)
    assert info.partitions == 3 and info.config.get("cleanup.policy") == "compact"
    assert backend.end_offsets(TOPIC) == {0: 0, 1: 4, 2: 0}
    records = backend.read(TOPIC, 1, 1, 10)
    # c and e were absent before the batch and are absent after it: no record for them
    assert [(r.key, r.value) for r in records] == [(b"a", b"2"), (b"b", b"1"), (b"d", None)]
    assert all(r.headers == batch_header(7) for r in records)
    assert records[0].timestamp == 200 and records[1].timestamp > 1_600_000_000_000


def test_a_batch_that_only_deletes_absent_keys_commits_nothing(tmp_path, backend):
    with open_stores(tmp_path, backend) as stores:
        stores.begin(0)
        stores["counts"].put(b"a", b"1")
        stores.commit()
        stores.begin(1)
        stores["counts"].put(b"b", b"1")
        stores["counts"].delete(b"b")
        stores["counts"].delete(b"c")
        stores.commit()
        assert stores.metrics()["stores"]["counts"]["committed_keys"] == 1   # batch 0's
    assert backend.end_offsets(TOPIC)[1] == 1
    shutil.rmtree(tmp_path / "state")   # restored from the changelog alone
    with open_stores(tmp_path, backend) as stores:
        stores.begin(2)
        assert list(stores["counts"].all()) == [(b"a", b"1")]


def test_one_append_per_commit_with_producer_id_and_batch_sequence(tmp_path, backend):
    with open_stores(tmp_path, backend) as stores:
        for batch in (3, 4):
            stores.begin(batch)
            stores["counts"].put_many([(b"k%d" % i, b"%d" % batch) for i in range(5)])
            stores.commit()
        stores.begin(5)
        stores.commit()
    assert backend.end_offsets(TOPIC)[1] == 10
    probe = pa.table({"timestamp": pa.array([0], pa.int64()), "key": pa.array([b"x"]),
                      "value": pa.array([b"x"]),
                      "headers": pa.array([[]], pa.list_(pa.struct([("key", pa.string()),
                                                                     ("value", pa.binary())])))})
    assert backend.append(TOPIC, 1, probe, producer_id="app/counts/1", sequence=4) is False
    assert backend.append(TOPIC, 1, probe, producer_id="app/counts/1", sequence=6) is True


def test_store_without_logging_writes_no_changelog(tmp_path, backend):
    local = StoreSpec("local", logging=False, changelog_topic="app-local-changelog")
    with open_stores(tmp_path, backend, specs=[local]) as stores:
        stores.begin(0)
        stores["local"].put(b"a", b"1")
        stores.commit()
    assert "app-local-changelog" not in backend.list_topics()


def test_task_metadata_is_logged_to_its_own_topic(tmp_path, backend):
    with open_stores(tmp_path, backend, meta_changelog_topic="app-0-meta") as stores:
        stores.begin(0)
        stores.meta_put("stream_time", b"\x00" * 7 + b"\x05")
        stores.commit()
    records = backend.read("app-0-meta", 1, 0, 10)
    assert [(r.key, r.value) for r in records] == [(b"stream_time", b"\x00" * 7 + b"\x05")]
    assert TOPIC in backend.list_topics() and backend.end_offsets(TOPIC)[1] == 0


def test_changelog_offset_checkpoint_means_no_catch_up_for_the_same_copy(tmp_path, backend):
    with open_stores(tmp_path, backend) as stores:
        stores.begin(0)
        stores["counts"].put_many([(b"k%d" % i, b"v") for i in range(100)])
        stores.commit()
    with open_stores(tmp_path, backend) as stores:
        stores.begin(1)
        assert stores.metrics()["restored_records"] == 0
        assert stores["counts"].get(b"k42") == b"v"


def test_changelog_with_too_few_partitions_is_a_clear_error(tmp_path, backend):
    backend.create_topic(TOPIC, 1, {"cleanup.policy": "compact"})
    with open_stores(tmp_path, backend) as stores:
        with pytest.raises(ValueError, match="has 1 partitions, task partition 1 needs 2"):
            stores.begin(0)
