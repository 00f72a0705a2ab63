"""Fault injection (issue 11, item 8): SIGKILL of the driver's whole process group at
random points, restarts, lost and corrupted state; results must equal a failure-free
run's. ``make test`` runs 3 kills per registered topology; ``make faults`` runs 50.

The five silent-loss bugs of issue 11 have their regression tests beside the features
that fixed them: a changed task count (``test_one_instance.py``), a second instance
(``test_one_instance.py``), a torn input tail under the checkpoint
(``test_offsets_beyond_end.py``), produce without flush (``test_producer_durability.py``),
Column steps and bad bytes (``test_bad_input_columns.py``); a deleted changelog topic is
in ``test_one_instance.py`` and ``test_state_damage.py``, a corrupted RocksDB copy in
``test_state_damage.py`` and in the kills here."""
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
