"""Kafka Streams itself on a broker, record caching on or off (``tests/oracle/.../CachedRuns.java``):
a parity case's runs, each processed by one KafkaStreams instance that commits once over
what it read (a long commit interval), as a Spark batch commits once."""
from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

from oracle_driver import build_oracle


def kafka_streams_runs(bootstrap: str, topology: str, runs: list[list[dict]], cache_bytes: int,
                       commit_ms: int = 5000) -> dict:
    """``{"outputs": [[key, value, timestamp], ...], "store": {key: value}}`` of ``out0`` and
    ``store0`` after ``runs`` (each a list of ``{"topic", "partition", "key", "value",
    "timestamp"}``) through the topology named ``topology`` (see CachedRuns.java), on
    topics of its own. ``bootstrap`` ``"test-driver"``: Kafka Streams' TopologyTestDriver instead
    (caching off), the records piped in the order given; its answer has ``"dropped"`` too."""
    build = build_oracle()
    command = ["java", "-Xmx512m", "-XX:+UseSerialGC", "-cp", f"{build / 'classes'}:{build / 'libs'}/*",
               "streamlib.oracle.CachedRuns", bootstrap, str(cache_bytes), str(commit_ms)]
    done = subprocess.run(command, input=json.dumps({"topology": topology, "runs": runs}), text=True,
                          capture_output=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"CachedRuns failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def kafka_streams_runs_at_once(*calls: tuple) -> list[dict]:
    """:func:`kafka_streams_runs` of each ``(bootstrap, topology, runs, cache_bytes)``, all at
    once: each is a JVM of its own on topics of its own that mostly waits for its commits."""
    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(lambda call: kafka_streams_runs(*call), calls))
