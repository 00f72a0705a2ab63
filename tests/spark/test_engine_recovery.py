"""Crashes and executors: a batch re-run after a crash counts once; two executors
give the same results as one."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from streamlib import Serdes
from engine import Workspace, latest_per_key, python_count, wordcount_topology
from test_engine_spark import random_lines

TESTS = str(Path(__file__).resolve().parents[1])
CRASH_AFTER_STORES_COMMIT = """
import os, sys
sys.path.insert(0, {tests!r})
from engine import Workspace, wordcount_topology
from pathlib import Path
from streamlib.spark.lower import BatchPlan

run = BatchPlan.run

def run_then_die(self, source, batch_id, *args):
    run(self, source, batch_id, *args)  # stores, changelogs and sink topics are committed ...
    os._exit(17)                  # ... and the driver dies before Spark commits the batch

BatchPlan.run = run_then_die
from streamlib.spark.session import get_or_create_session
spark = get_or_create_session("local[2]", "crash", {{"spark.ui.enabled": "false"}})
Workspace(Path({root!r})).run(spark, wordcount_topology())
"""


def test_batch_rerun_after_crash_between_store_commit_and_spark_commit_counts_once(spark, tmp_path):
    ws = Workspace(tmp_path)
    lines = random_lines(2000, 7)
    ws.produce("lines", [(None, line) for line in lines], partitions=2)
    script = CRASH_AFTER_STORES_COMMIT.format(tests=TESTS, root=str(tmp_path))
    crashed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert crashed.returncode == 17, crashed.stderr[-3000:]
    half_done = ws.read("counts-out", value_serde=Serdes.long())
    assert half_done, "the crashed run had written its sink records"

    app = ws.run(spark, wordcount_topology())  # Spark re-runs the uncommitted batch
    expected = dict(python_count(lines))
    assert dict(app.store("counts").all()) == expected
    output = ws.read("counts-out", value_serde=Serdes.long())
    assert output == half_done, "the re-run batch wrote no duplicate records"
    assert latest_per_key(output) == expected
    app.stop()


def test_two_executors_give_the_same_counts(local_cluster, tmp_path):
    lines = random_lines(3000, 8)
    ws = Workspace(tmp_path)
    ws.produce("lines", [(None, line) for line in lines], partitions=4)
    stdout = local_cluster(textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {TESTS!r})
        from pathlib import Path
        from engine import Workspace, wordcount_topology
        app = Workspace(Path({str(tmp_path)!r})).run(spark, wordcount_topology())
        print(json.dumps([dict(app.store("counts").all()), app.metrics()["records_in"]]))
    """))
    counts, records_in = json.loads(stdout.strip().splitlines()[-1])
    assert counts == dict(python_count(lines))
    # the split ran in the source's reader on an executor: its tasks' metrics arrived too
    assert records_in == len(lines) + sum(counts.values())
    assert latest_per_key(ws.read("counts-out", value_serde=Serdes.long())) == counts
