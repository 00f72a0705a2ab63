"""Pytest plugin: Kafka Streams itself (Java, ``tests/oracle/``) as the semantics oracle.

``oracle_results`` builds the Java program once (Maven; offline when the local
repository has everything; output cached under ``.cache/oracle/<kafka version>/`` and
rebuilt only when its sources change), runs every case of every scenario through it
in ONE JVM and returns ``{(scenario, case): output records}``.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracle_scenarios import SCENARIOS, cases
from streamlib import jvm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from kafka_local import maven  # noqa: E402

ORACLE = Path(__file__).resolve().parent / "oracle"
#: Cases per scenario.
CASES = 200


def _sources_digest() -> str:
    digest = hashlib.sha256(jvm.versions()["KAFKA_VERSION"].encode())
    for path in sorted([ORACLE / "pom.xml", *ORACLE.rglob("*.java")]):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def build_oracle() -> Path:
    """The oracle's build directory (``classes/`` and ``libs/``), built if stale."""
    build = jvm.cache_dir() / "oracle" / jvm.versions()["KAFKA_VERSION"]
    stamp = build / "built-from"
    digest = _sources_digest()
    if not (stamp.exists() and stamp.read_text() == digest):
        maven(["package", f"-Dkafka.version={jvm.versions()['KAFKA_VERSION']}",
               f"-Doracle.build.dir={build}"], ORACLE / "pom.xml")
        stamp.write_text(digest)
    return build


def fast_tmpdir() -> str | None:
    """``/dev/shm`` where it exists: every case opens and deletes fresh RocksDB stores on
    both sides, which costs ~6x more on a busy disk than in memory."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _tmpdir_option() -> list[str]:
    tmp = fast_tmpdir()
    return [f"-Djava.io.tmpdir={tmp}"] if tmp else []


def run_oracle(requests: list[dict]) -> dict[tuple[str, int], list[dict]]:
    build = build_oracle()
    done = subprocess.run(["java", "-Xmx512m", "-XX:+UseSerialGC", *_tmpdir_option(), "-cp",
                           f"{build / 'classes'}:{build / 'libs'}/*", "streamlib.oracle.Oracle"],
                          input="".join(json.dumps(r) + "\n" for r in requests),
                          capture_output=True, text=True, timeout=900)
    if done.returncode:
        raise RuntimeError(f"the Kafka Streams oracle failed ({done.returncode}):\n{done.stderr[-4000:]}")
    results = {}
    for line in done.stdout.splitlines():
        answer = json.loads(line)
        results[answer["scenario"], answer["case"]] = answer.get("output", {"error": answer.get("error")})
    return results


@pytest.fixture(scope="session")
def oracle_results() -> dict[tuple[str, int], list[dict]]:
    """Kafka Streams' output for every case of every scenario (one JVM run)."""
    requests = [c for name in SCENARIOS for c in cases(name, CASES)]
    return run_oracle(requests)
