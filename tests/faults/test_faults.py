"""Fault injection (issue 11, item 8): SIGKILL of the driver's whole process group at
random points, restarts, lost and corrupted state, and one executor JVM killed
mid-batch on ``local-cluster``; results must equal a failure-free run's. ``make test``
runs 2 kills per registered topology (small inputs), each topology with its own seed so
that together they reach every kill point, and makes the failure-free runs in the test
session's own Spark (no JVM start); ``make faults`` runs 50, every run a process.

The five silent-loss bugs of issue 11 have their regression tests beside the features
that fixed them: a changed task count (``test_one_instance.py``), a second instance
(``test_one_instance.py``), a torn input tail under the checkpoint
(``test_offsets_beyond_end.py``), produce without flush (``test_producer_durability.py``),
Column steps and bad bytes (``test_bad_input_columns.py``); a deleted changelog topic is
in ``test_one_instance.py`` and ``test_state_damage.py``, a corrupted RocksDB copy in
``test_state_damage.py`` and in the kills here."""
from __future__ import annotations

from dataclasses import replace
from functools import partial

import pytest

from harness import check_output, compare, executor_kill_run, fault_run, read_outputs, table_from_log
from streamlib.topics import open_backend
from topologies import REGISTRY

#: Input records per topology inside ``make test``: enough micro-batches for every
#: kill point to come (at least 4 task batches), windows that close, late table
#: updates. (The time is in the JVM starts, not in the records.)
SMALL = 200
#: Kills per topology inside ``make test``: each costs a JVM start (~30 s).
KILLS = 2
#: The kill points these seeds draw first: counts store-commit and restore, final-counts
#: spark-commit and a timer, grace-join mid-batch and sink-append.
SEEDS = {"counts": 7, "final-counts": 5, "grace-join": 4}


def small(name: str):
    spec = REGISTRY[name]
    return replace(spec, inputs=partial(spec.inputs, n=SMALL))


def test_every_topology_has_its_seed():
    assert sorted(SEEDS) == sorted(REGISTRY)


@pytest.mark.timeout(2400)  # four JVM starts: minutes each on a loaded machine
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_kills_lose_and_duplicate_nothing(name, tmp_path, spark):
    spec = small(name)
    log = tmp_path / "runs.jsonl"
    outcome = fault_run(spec, tmp_path, kills=KILLS, seed=SEEDS[name], log=log, spark=spark)
    assert outcome.kills == KILLS
    assert outcome.mismatches == [] and outcome.failures == []
    assert outcome.compared
    assert f"| {name} | {KILLS} | {outcome.restarts} |" in table_from_log(log)
    # The comparison can fail: a repeated output record (without headers) is reported.
    backend = open_backend(f"local://{tmp_path / 'faulty' / 'log'}")
    topic = next(iter(spec.outputs))
    partition = next(p for p, end in sorted(backend.end_offsets(topic).items()) if end)
    last = next(r for r in reversed(backend.read(topic, partition, 0, backend.end_offsets(topic)[partition]))
                if r.value is not None)
    backend.produce(topic, key=last.key, value=last.value, partition=partition, timestamp=last.timestamp)
    backend.flush()
    assert compare(spec, tmp_path / "reference", tmp_path / "faulty")
    assert read_outputs(tmp_path / "faulty", spec)[topic]


@pytest.mark.timeout(2400)
def test_a_killed_executor_jvm_mid_batch_is_retried_on_the_other_and_results_are_exact(tmp_path, spark):
    """local-cluster[2,1,1024]: SIGKILL of the executor JVM running a task as it starts
    its rows (its Python workers die with it); Spark retries the task on the other
    executor, the run finishes by itself, and outputs and stores equal a failure-free
    run's (counts: a repartition, so the killed executor's shuffle files are lost too).
    The failure-free run is the kill test's (same seed and input)."""
    outcome, killed = executor_kill_run(small("counts"), tmp_path, seed=SEEDS["counts"], spark=spark)
    assert killed.startswith("executor "), killed
    assert outcome.mismatches == []
    assert outcome.compared and outcome.kills == 1


def rows(*pairs, headers=None):
    return [(repr(k), v, ts, headers or {}) for k, v, ts in pairs]


def test_each_check_reports_what_it_is_for():
    """No Spark: every check finds its kind of damage and passes equal records."""
    counts = rows(("a", 1, 1), ("a", 2, 2))
    assert check_output("t", "increasing", counts, counts) == []
    assert "duplicated" in check_output("t", "increasing", counts, counts + counts[-1:])[0]
    assert check_output("t", "latest", counts, counts[:1])  # the latest update lost
    finals = rows(("w1", 5, 1), ("w2", 3, 2))
    assert check_output("t", "once", finals, finals[::-1]) == []
    assert "2 times" in check_output("t", "once", finals, finals + finals[:1])[0]
    assert "lost" in check_output("t", "once", finals, finals[1:])[0]
    assert check_output("t", "once", finals, rows(("w1", 4, 1), ("w2", 3, 2)))  # an early result
    first = rows(("A", "o1@a", 6))
    corrected = first + rows(("A", "o1@b", 6), headers={"streamlib.update": b"1"})
    assert check_output("t", "per-record", corrected, corrected) == []
    assert check_output("t", "per-record", corrected, first)  # the correction lost
    assert "lacks the update header" in " ".join(check_output("t", "per-record", corrected, first + first))
    # a retraction (a late delete before the record's time came after it) = no result
    retracted = first + rows(("A", None, 6), headers={"streamlib.update": b"1"})
    assert check_output("t", "per-record", [], retracted) == []
    assert check_output("t", "per-record", first, retracted)  # the result lost
    assert "corrupt" in check_output("t", "latest", counts, counts + [("<corrupt>", "x", 0, {})])[0]


def test_damage_runs_are_rows_of_the_table_and_a_full_disk_must_stop_clearly(tmp_path):
    """No Spark: a damage run's line in the run log is a row with its damage, and only
    a clear error counts as a full disk's expected stop."""
    from harness import Outcome, _log
    from log_faults import clear_stop

    outcome = Outcome("counts full-disk", restarts=4, records=400, compared=True)
    outcome.damage.update({"full-disk": 1, "stopped: streamlib.topics.TopicsError: disk full": 1})
    _log(tmp_path / "runs.jsonl", outcome.entry(), verbose=False)
    table = table_from_log(tmp_path / "runs.jsonl")
    assert "| counts full-disk | 0 | 4 | 400 | 0 | 0 |" in table
    assert "stopped: streamlib.topics.TopicsError: disk full 1" in table
    assert outcome.row().split("|")[-2] in table
    assert clear_stop("failed: exit 1: Traceback\n  ...\nstreamlib.topics.TopicsError: full\n")
    assert clear_stop("OSError: [Errno 28] No space left on device")
    assert clear_stop("failed: exit 1: Traceback\nKeyError: 'x'\n") is None
