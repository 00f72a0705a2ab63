"""Sticky placement's choices and bookkeeping (no Spark), and the committed placement jar
against its sources."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from streamlib.spark import internals, placement
from streamlib.spark.placement import StickyPlacement, choose_locations

ROOT = Path(__file__).resolve().parents[2]


def test_live_homes_stay_even_when_the_load_is_uneven():
    # a new executor gets the homeless tasks, never the ones whose executor lives
    assert choose_locations(["a", "a", "a", None], ["a", "b"]) == ["a", "a", "a", "b"]


def test_tasks_of_a_lost_executor_spread_over_the_least_loaded():
    assert choose_locations(["a", "b", "c", "c"], ["a", "b", "d"]) == ["a", "b", "d", "a"]
    assert choose_locations(["a", "b", "c", "c", "c"], ["a", "b"]) == ["a", "b", "a", "b", "a"]


def test_no_executor_known_means_no_preference():
    assert choose_locations(["a", None], []) == [None, None]


def _placement(monkeypatch, runs: list[list[str]], standbys: int = 0) -> StickyPlacement:
    passes = iter(runs)
    monkeypatch.setattr(internals, "take_placement_runs", lambda spark, acc: next(passes))
    monkeypatch.setattr(internals, "placement_runs", lambda spark: object())
    return StickyPlacement(spark=None, standby_replicas=standbys)


def test_runs_count_stays_and_moves(monkeypatch):
    sticky = _placement(monkeypatch, [
        ["1 0 0 h", "1 1 1 h"],           # first runs: no previous executor
        ["1 0 0 h", "1 1 1 h"],           # both stayed
        ["1 0 0 h", "1 1 0 h"],           # task 1_1 moved from executor 1 to 0
    ])
    sticky.record(0, {})
    assert sticky.record(1, {"1_0": {"restored_records": 0}}) == {
        "1_0": {"executor": "0", "host": "h", "previous_executor": "0", "moved": False},
        "1_1": {"executor": "1", "host": "h", "previous_executor": "1", "moved": False}}
    ran = sticky.record(2, {"1_1": {"restored_records": 7}})
    assert ran["1_1"] == {"executor": "0", "host": "h", "previous_executor": "1", "moved": True}
    summary = sticky.summary()
    assert (summary["task_runs"], summary["on_previous_executor"], summary["moves"]) == (6, 3, 1)
    assert summary["executors"] == {"1_0": "0", "1_1": "0"}
    assert summary["passes"][-1] == {"batch": 2, "task_runs": 2, "moved": ["1_1"], "restored_records": 7}


def test_a_new_query_goes_on_from_the_last_ones_homes(monkeypatch):
    first = _placement(monkeypatch, [["1 0 1 h"]])
    first.record(0, {})
    second = _placement(monkeypatch, [["1 0 1 h"]])
    second.go_on_from(first)
    assert second.record(1, {})["1_0"]["moved"] is False
    assert second.summary()["on_previous_executor"] == 1


def test_no_placement_in_local_mode():
    class Context:
        master = "local[2]"

    class Session:
        sparkContext = Context()

    assert placement.wanted(Session()) is False


def test_standbys_are_ignored_in_local_mode_with_a_log_line_once_per_application(caplog):
    class Context:
        master = "local[2]"
        applicationId = "local-standbys-ignored"

    class Session:
        sparkContext = Context()

    with caplog.at_level("WARNING", logger="streamlib"):
        assert StickyPlacement.start(Session(), standby_replicas=1) is None
        assert StickyPlacement.start(Session(), standby_replicas=1) is None   # the next query start
    assert caplog.text.count("num_standby_replicas=1 ignored: local[2] runs every task in one executor") == 1


def test_a_move_says_whether_it_went_onto_a_standby(monkeypatch):
    sticky = _placement(monkeypatch, [["1 0 0 h", "1 1 1 h"], ["1 0 1 h", "1 1 0 h"]], standbys=1)
    sticky.record(0, {})
    sticky.standbys.assigned = {"1_0": ["executor_h_1"], "1_1": ["executor_h_2"]}
    sticky.record(1, {"1_0": {"restored_records": 3}, "1_1": {"restored_records": 40}})
    assert sticky.summary()["moved_tasks"] == [
        {"task": "1_0", "batch": 1, "from": "0", "to": "1", "onto_standby": True, "restored_records": 3},
        {"task": "1_1", "batch": 1, "from": "1", "to": "0", "onto_standby": False, "restored_records": 40}]


def test_standby_lag_is_reported_per_task_and_executor(monkeypatch):
    sticky = _placement(monkeypatch, [], standbys=1)
    sticky.offsets = {"1_0": {"counts": 50}}
    sticky.standbys.assigned = {"1_0": ["executor_h_1"]}
    sticky.standbys.copies = {"1_0": {"executor_h_1": {"offsets": {"counts": 45}, "batch": 3}}}
    assert sticky.summary()["standbys"]["tasks"] == {"1_0": [{"executor": "1", "lag": 5, "batch": 3}]}


def _classes(jar: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(jar) as z:
        return {name: z.read(name) for name in z.namelist()}


@pytest.mark.skipif(shutil.which("javac") is None, reason="no javac to rebuild the jar with")
def test_committed_jar_is_built_from_the_sources(tmp_path):
    committed = ROOT / "streamlib" / "spark" / "jars" / "streamlib-placement.jar"
    rebuilt = tmp_path / "placement.jar"
    subprocess.run([sys.executable, str(ROOT / "tools" / "placement_jar.py"), "--out", str(rebuilt)], check=True,
                   capture_output=True)
    made_by = [line for line in _classes(committed)["META-INF/MANIFEST.MF"].decode().splitlines()
               if line.startswith("Created-By")]
    if made_by != [line for line in _classes(rebuilt)["META-INF/MANIFEST.MF"].decode().splitlines()
                   if line.startswith("Created-By")]:
        # another javac writes other bytes: the same classes are all it can check
        assert sorted(_classes(committed)) == sorted(_classes(rebuilt))
        return
    assert _classes(committed) == _classes(rebuilt), "rebuild the jar: python tools/placement_jar.py"
