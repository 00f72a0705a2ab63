"""examples/dedup: the de-duplicating processor's TTL under the driver's wall clock, and
the example run as a user runs it, with spark-submit."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from streamlib import Serdes, TopologyTestDriver

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "dedup" / "dedup.py"
S = Serdes.string()


def _example():
    spec = importlib.util.spec_from_file_location("dedup_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_duplicates_within_the_ttl_are_dropped_and_expired_ids_pass_again():
    dedup = _example()
    with TopologyTestDriver(dedup.build_topology()) as driver:
        inp = driver.create_input_topic(dedup.INPUT_TOPIC, S, S)
        out = driver.create_output_topic(dedup.OUTPUT_TOPIC, S, S)
        inp.pipe_input("a", "1")
        inp.pipe_input("b", "2")
        inp.pipe_input("a", "3")
        driver.advance_wall_clock_time(timedelta(minutes=9))
        inp.pipe_input("a", "4")            # 9 minutes later: still a duplicate
        inp.pipe_input("c", "5")            # first seen at minute 9
        driver.advance_wall_clock_time(timedelta(minutes=1))   # the sweep at 10 min forgets a and b
        assert sorted(k for k, _ in driver.get_key_value_store(dedup.STORE).all()) == ["c"]
        inp.pipe_input("a", "6")
        inp.pipe_input("c", "7")
        assert out.read_key_values_to_list() == [("a", "1"), ("b", "2"), ("c", "5"), ("a", "6")]


def test_the_example_runs_with_spark_submit(tmp_path):
    submit = Path(sys.executable).parent / "spark-submit"
    done = subprocess.run(
        [str(submit), "--master", "local[2]", str(EXAMPLE), "--bootstrap", f"local://{tmp_path / 'log'}",
         "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-3000:]
    ids = {line.split("\t")[0] for line in (ROOT / "examples/dedup/data/events.tsv").read_text().splitlines()}
    passed = re.findall(r"^  (order-\d+)  ", done.stdout, re.MULTILINE)
    assert sorted(passed) == sorted(ids)   # every id once: the first of its records
    assert f"{len(ids)} records passed to dedup-output; {len(ids)} ids remembered" in done.stdout
