"""A damaged local store copy is rebuilt from its changelog; a changelog deleted under
a copy that reflects it is an error naming the topic and the reset command."""
from __future__ import annotations

import glob

import pytest

from streamlib.errors import ChangelogMissing
from streamlib.state import StoreSpec, open_task_stores
from streamlib.topics import open_backend

TOPIC = "app-counts-changelog"


@pytest.fixture
def backend(tmp_path):
    return open_backend(f"local://{tmp_path}/topics?fsync=false")


def open_copy(tmp_path, backend):
    return open_task_stores(tmp_path / "state" / "app" / "0_0", [StoreSpec("counts", changelog_topic=TOPIC)],
                            backend=backend, partition=0, num_partitions=1, producer_prefix="app")


def fill(tmp_path, backend) -> list:
    with open_copy(tmp_path, backend) as stores:
        for batch in range(3):
            stores.begin(batch)
            stores["counts"].put_many([(b"k%d" % i, b"%d" % batch) for i in range(batch, 10)])
            stores.commit()
        return list(stores["counts"].all())


def test_a_corrupted_rocksdb_copy_is_restored_from_the_changelog(tmp_path, backend):
    expected = fill(tmp_path, backend)
    [store_dir] = glob.glob(str(tmp_path / "state" / "app" / "0_0" / "counts"))
    for name in glob.glob(store_dir + "/MANIFEST-*") + glob.glob(store_dir + "/CURRENT"):
        with open(name, "r+b") as f:
            f.write(b"\x00garbage\x00" * 8)
    with open_copy(tmp_path, backend) as stores:
        stores.begin(3)
        assert list(stores["counts"].all()) == expected
        assert stores.metrics()["restored_records"] > 0


def test_a_changelog_deleted_under_a_copy_is_an_error_not_a_silent_reset(tmp_path, backend):
    fill(tmp_path, backend)
    backend.delete_topic(TOPIC)
    with open_copy(tmp_path, backend) as stores:
        with pytest.raises(ChangelogMissing, match=f"'{TOPIC}' is missing.*python -m streamlib reset "
                                                   "--application-id app"):
            stores.begin(3)
    assert TOPIC not in backend.list_topics()


def test_a_corrupted_copy_of_the_task_metadata_store_starts_over_like_a_lost_one(tmp_path, backend):
    # Found by the fault harness: the task's metadata store has no changelog.
    expected = fill(tmp_path, backend)
    meta = tmp_path / "state" / "app" / "0_0" / "__task_meta"
    with open(meta / "CURRENT", "r+b") as f:
        f.write(b"\x00garbage\x00" * 8)
    with open_copy(tmp_path, backend) as stores:
        stores.begin(3)
        assert list(stores["counts"].all()) == expected
