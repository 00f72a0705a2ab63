"""Fault injection (issue 11, item 8): SIGKILL of the driver's whole process group at
random points, restarts, lost and corrupted state; results must equal a failure-free
run's. ``make test`` runs 3 kills per registered topology; ``make faults`` runs 50."""
from __future__ import annotations

import pytest

from harness import compare, fault_run, read_outputs
from streamlib.topics import open_backend
from topologies import REGISTRY


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_three_kills_lose_and_duplicate_nothing(name, tmp_path):
    spec = REGISTRY[name]
    outcome = fault_run(spec, tmp_path, kills=3, seed=7)
    assert outcome.kills == 3
    assert outcome.mismatches == []
    # The comparison can fail: a duplicated output record is reported.
    backend = open_backend(f"local://{tmp_path / 'faulty' / 'log'}")
    topic = next(iter(spec.outputs))
    last = backend.read(topic, 0, 0, backend.end_offsets(topic)[0])[-1]
    backend.produce(topic, key=last.key, value=last.value, partition=0)
    backend.flush()
    problems = compare(spec, tmp_path / "reference", tmp_path / "faulty")
    assert spec.increasing_outputs and any("duplicated" in p for p in problems), problems
    assert read_outputs(tmp_path / "faulty", spec)[topic]
