"""Pytest plugin: Kafka Streams itself (Java, ``tests/oracle/``) as the semantics oracle.

``oracle_results`` builds the Java program once (Maven; offline when the local
repository has everything; output cached under ``.cache/oracle/<kafka version>/`` and
rebuilt only when its sources change), runs every case of every scenario through it
in ONE JVM. The JVM starts when the fixture is first used and answers case by case
while the tests run our side, scenario by scenario in the same order, so both sides
overlap; a test waits only for its own scenario's answers.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections import Counter
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


def _command() -> list[str]:
    build = build_oracle()
    return ["java", "-Xmx512m", "-XX:+UseSerialGC", *_tmpdir_option(), "-cp",
            f"{build / 'classes'}:{build / 'libs'}/*", "streamlib.oracle.Oracle"]


class OracleRun:
    """One JVM answering ``requests`` in order, in the background; :meth:`scenario`
    waits for one scenario's answers."""

    def __init__(self, requests: list[dict]):
        self._expected = Counter(r["scenario"] for r in requests)
        self._results: dict[tuple[str, int], object] = {}
        self._arrived: Counter = Counter()
        self._done = False
        self._changed = threading.Condition()
        self._proc = subprocess.Popen(_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
        payload = "".join(json.dumps(r) + "\n" for r in requests)
        threading.Thread(target=self._write, args=(payload,), daemon=True).start()
        threading.Thread(target=self._read, daemon=True).start()
        self._stderr: list[str] = []
        threading.Thread(target=lambda: self._stderr.extend(self._proc.stderr), daemon=True).start()

    def _write(self, payload: str) -> None:
        try:
            self._proc.stdin.write(payload)
            self._proc.stdin.close()
        except BrokenPipeError:  # the JVM died; _read reports it
            pass

    def _read(self) -> None:
        for line in self._proc.stdout:
            answer = json.loads(line)
            with self._changed:
                self._results[answer["scenario"], answer["case"]] = answer.get(
                    "output", {"error": answer.get("error")})
                self._arrived[answer["scenario"]] += 1
                self._changed.notify_all()
        self._proc.wait()
        with self._changed:
            self._done = True
            self._changed.notify_all()

    def scenario(self, name: str, timeout: float = 900) -> dict[int, object]:
        """``{case: output records}`` (or ``{"error": message}``) of scenario ``name``."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._done or self._arrived[name] >= self._expected[name],
                                          timeout):
                raise TimeoutError(f"the Kafka Streams oracle did not answer {name} in {timeout} s")
            if self._arrived[name] < self._expected[name]:
                raise RuntimeError(f"the Kafka Streams oracle failed ({self._proc.returncode}):\n"
                                   f"{''.join(self._stderr)[-4000:]}")
            return {case: out for (scenario, case), out in self._results.items() if scenario == name}

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()


def run_oracle(requests: list[dict]) -> dict[tuple[str, int], list[dict]]:
    """Every request's answer, ``{(scenario, case): output}`` (waits for all)."""
    run = OracleRun(requests)
    try:
        return {(name, case): out for name in dict.fromkeys(r["scenario"] for r in requests)
                for case, out in run.scenario(name).items()}
    finally:
        run.close()


@pytest.fixture(scope="session")
def oracle_results():
    """Kafka Streams' answers for every case of every scenario (one JVM, started in the
    background): ``oracle_results.scenario(name) -> {case: output}``."""
    run = OracleRun([c for name in SCENARIOS for c in cases(name, CASES)])
    yield run
    run.close()
