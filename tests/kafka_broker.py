"""Pytest fixtures for topic backends: a real Apache Kafka broker and a fresh local log.

``kafka_bootstrap`` is ``host:port`` of ``$STREAMLIB_TEST_KAFKA`` if set, else of an
Apache Kafka broker (KRaft, single node, the version pinned in
``streamlib/versions.env``) started from its own jars on a free loopback port,
once per test session and only when a test asks for it (``tools/kafka_local.py``).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

from streamlib.topics import open_backend

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from kafka_local import running_broker  # noqa: E402


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """``host:port`` of an Apache Kafka broker for this test session."""
    external = os.environ.get("STREAMLIB_TEST_KAFKA")
    if external:
        yield external
        return
    with running_broker() as bootstrap:
        yield bootstrap


@pytest.fixture
def local_backend(tmp_path):
    """A fresh local log in the test's temporary directory."""
    backend = open_backend(f"local://{tmp_path / 'log'}")
    yield backend
    backend.close()


@pytest.fixture
def kafka_backend(kafka_bootstrap):
    """A Kafka backend on the test broker."""
    backend = open_backend(f"kafka://{kafka_bootstrap}")
    yield backend
    backend.close()
