"""tools/kafka_local.py: `up` never mistakes another process on its port for its broker,
and `down` stops only the broker `up` started."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kafka_broker import kafka_bootstrap  # noqa: F401  (fixture)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import kafka_local  # noqa: E402

@pytest.fixture
def taken_port():
    """A port a plain socket listens on (not a Kafka broker)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]

def test_up_fails_with_a_message_when_the_port_is_taken(taken_port, capsys):
    assert kafka_local.main(["up", "--port", str(taken_port)]) == 1
    err = capsys.readouterr().err
    assert f"127.0.0.1:{taken_port} is already in use" in err

def test_start_broker_refuses_a_taken_port(taken_port, tmp_path):
    with pytest.raises(kafka_local.PortTaken, match=f"127.0.0.1:{taken_port}"):
        kafka_local.start_broker(taken_port, tmp_path)
    assert not (tmp_path / "broker.pid").exists()

def test_down_says_so_when_it_started_nothing(taken_port, capsys):
    assert kafka_local.main(["down", "--port", str(taken_port)]) == 1
    assert "nothing stopped" in capsys.readouterr().err

def test_a_pid_file_naming_another_process_is_not_our_broker(tmp_path):
    other = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "broker.pid").write_text(str(other.pid))
        assert kafka_local.our_broker_pid(tmp_path) is None
    finally:
        other.kill()
        other.wait()

def test_readiness_needs_our_own_cluster_id(kafka_bootstrap, tmp_path):
    """Another broker answering on the port (the issue's shared machine) is not ours
    being ready, however alive our process is."""
    port = int(kafka_bootstrap.rsplit(":", 1)[1])
    ours = subprocess.Popen(["sleep", "60"])
    log = tmp_path / "broker.log"
    log.write_text("")
    try:
        with pytest.raises(RuntimeError, match="did not answer with its cluster id ours0000.*answered there"):
            kafka_local._wait_until_serving(port, ours, log, "ours0000", timeout=3)
    finally:
        ours.kill()
        ours.wait()
