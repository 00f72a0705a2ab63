"""A full disk (ENOSPC) during an append: the error names topic and partition, nothing
half-written is ever read, produced records stay buffered, and once there is room the
next flush writes them, each once. Needs root to mount a small tmpfs (else skipped)."""
from __future__ import annotations

import os
import subprocess

import pytest

from streamlib.topics import TopicsError, open_backend


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)  # lazily: the backend may hold files


def test_a_full_disk_loses_nothing_and_duplicates_nothing(small_disk):
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * 600_000)
    backend = open_backend(f"local://{small_disk / 'log'}")
    backend.create_topic("t")
    acknowledged = []
    with pytest.raises(TopicsError, match=r"topic 't' partition 0: cannot append \(No space left on device\)"):
        for batch in range(1000):
            values = [b"%06d" % (batch * 50 + i) + b"x" * 2000 for i in range(50)]
            for value in values:
                backend.produce("t", value=value, partition=0)
            backend.flush()
            acknowledged.extend(values)
    readable = [r.value for r in backend.read("t", 0, 0, backend.end_offsets("t")[0])]
    assert readable == acknowledged  # nothing half-written
    filler.unlink()
    backend.flush()  # the buffered batch, now that there is room
    readable = [r.value for r in backend.read("t", 0, 0, backend.end_offsets("t")[0])]
    assert readable == acknowledged + values
    backend.close()


def test_a_store_copy_on_a_full_disk_says_so_and_applies_nothing(small_disk):
    from streamlib.errors import StoreWriteFailed
    from streamlib.state.rocksdb import RocksDB

    db = RocksDB.open(str(small_disk / "copy"), 5.0)
    db.write([(b"a", b"1")], {b"last_batch": b"0"})
    (small_disk / "filler").write_bytes(b"\0" * (os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize))
    with pytest.raises(StoreWriteFailed, match=r"the RocksDB copy at .*/copy refused a write: .*No space left"):
        for batch in range(1, 1000):
            db.write([(b"k%06d" % i, b"x" * 1000) for i in range(batch * 100, batch * 100 + 100)],
                     {b"last_batch": b"%d" % batch})
    last = int(db.meta_get(b"last_batch"))
    assert db.get(b"k%06d" % ((last + 1) * 100)) is None   # the refused write applied nothing
    assert db.get(b"k%06d" % (last * 100 + 99)) is not None if last else db.get(b"a") == b"1"
