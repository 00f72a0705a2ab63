"""A full disk (ENOSPC) during an append: the error names topic and partition, nothing
half-written is ever read, produced records stay buffered, and once there is room the
next flush writes them, each once. Needs root to mount a small tmpfs (else skipped)."""
from __future__ import annotations

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
