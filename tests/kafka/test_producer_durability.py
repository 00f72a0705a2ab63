"""Records produced and never flushed are written when the interpreter exits, or the
process says loudly that they are lost (issue 11, item 4)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid

import pytest

from streamlib.topics import open_backend

PRODUCE_AND_EXIT = """
import json, sys
from streamlib.topics import open_backend
url, topic, n, how, config = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], json.loads(sys.argv[5])
backend = open_backend(url, **config)
backend.create_topic(topic, partitions=2, exist_ok=True)
for i in range(n):
    backend.produce(topic, key=str(i).encode(), value=b"v%d" % i)
if how == "drop":        # the last reference goes away before exit
    del backend
elif how == "with":      # the context manager closes, which flushes
    with backend:
        backend.produce(topic, key=b"last", value=b"one")
elif how == "vanish":    # the topic is deleted under the buffered records
    import shutil
    shutil.rmtree(backend.root + "/" + topic)
print("exiting", flush=True)
"""


def _run(url: str, topic: str, n: int, how: str, config: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PRODUCE_AND_EXIT, url, topic, str(n), how, json.dumps(config)],
                          capture_output=True, text=True, timeout=120)


def _count(url: str, topic: str, config: dict) -> int:
    backend = open_backend(url, **config)
    try:
        return sum(len(backend.read(topic, p, 0, end)) for p, end in backend.end_offsets(topic).items())
    finally:
        backend.close()


@pytest.fixture(params=["local", "kafka"])
def target(request, tmp_path):
    if request.param == "local":
        return f"local://{tmp_path / 'log'}", {}
    return f"kafka://{request.getfixturevalue('kafka_bootstrap')}", {}


@pytest.mark.parametrize("how,extra", [("exit", 0), ("drop", 0), ("with", 1)])
def test_records_produced_without_flush_are_written_at_exit(target, how, extra):
    url, config = target
    topic = f"t-{uuid.uuid4().hex[:8]}"
    done = _run(url, topic, 1000, how, config)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _count(url, topic, config) == 1000 + extra


def test_records_that_cannot_be_written_at_exit_are_reported_loudly(tmp_path):
    url = f"local://{tmp_path / 'log'}"
    done = _run(url, "gone", 10, "vanish", {})
    assert "exiting" in done.stdout
    assert "streamlib: error: records produced to" in done.stderr and "they are LOST" in done.stderr
    shutil.rmtree(tmp_path / "log")
