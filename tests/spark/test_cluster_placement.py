"""On a Spark standalone cluster (tools/spark_cluster.py: a master and 2 workers of one
core, each with its own work and state directory): a stateful topology's tasks stay on the
executor holding their stores, batch after batch, as the tasks' own metrics report; with a
standby copy, a killed executor's task moves onto it and replays at most a batch."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spark_session import TEST_CONF

ROOT = Path(__file__).resolve().parents[2]
TESTS = str(Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT / "tools"))
from spark_cluster import running_cluster  # noqa: E402

pytestmark = pytest.mark.cluster

BATCHES = 4
#: Each run on the previous run's executor: the issue's bar is 99%; at 4 tasks a batch
#: a single move is more than 1%.
STAY_SHARE = 0.99

DRIVER = """
import json, sys, time
sys.path.insert(0, {tests!r})
sys.path.insert(0, {tools!r})
from spark_cluster import kill_executor
from pathlib import Path
from streamlib import Streams
from streamlib.spark.session import get_or_create_session
from engine import Workspace, wordcount_topology, python_count, latest_per_key
from streamlib import Serdes

spark = get_or_create_session({master!r}, "streamlib-cluster-placement", {conf!r})
spark.sparkContext.setLogLevel("ERROR")
deadline = time.time() + 300
while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() <= 2:   # 2 executors and the driver
    assert time.time() < deadline, "executors did not register"
    time.sleep(0.2)
ws = Workspace(Path({root!r}))
# a relative state_dir lands in each executor's own work directory: one copy per machine
app = Streams(wordcount_topology(), ws.config(state_dir="streamlib-state", num_partitions=4,
                                              num_standby_replicas={standbys}), spark=spark)
lines = []
killed = None
standbys_at_kill = None
changelog_records = []   # task 1_0's, per batch


def kill_executor_of(task):
    # SIGKILL the executor JVM that ran `task` last (found by its app and executor id)
    executor = app.metrics()["placement"]["executors"][task]
    kill_executor(spark.sparkContext.applicationId, executor)
    return executor


for batch in range({batches}):
    if batch == {kill_at}:
        standbys_at_kill = app.metrics()["placement"].get("standbys")
        killed = kill_executor_of("1_0")
    chunk = [f"w{{(batch * 7 + i) % 40}} x{{i % 13}} shared" for i in range(300)]
    lines += chunk
    ws.produce("lines", [(None, line) for line in chunk], partitions=4)
    app.process_available()
    changelog_records.append(app.metrics()["tasks"]["1_0"].get("changelog_records"))
metrics = app.metrics()
print(json.dumps({{"expected": python_count(lines),
                  "output": latest_per_key(ws.read("counts-out", value_serde=Serdes.long())),
                  "store": dict(app.store("counts").all()),
                  "placement": metrics["placement"], "killed": killed,
                  "standbys_at_kill": standbys_at_kill, "changelog_records": changelog_records,
                  "tasks": metrics["tasks"]}}))
app.stop()
spark.stop()
"""


@pytest.fixture()
def cluster(tmp_path):
    with running_cluster(tmp_path / "cluster", workers=2, cores=1, memory="1g") as running:
        yield running


def run_driver(cluster, root: Path, batches: int, kill_at: int = -1, standbys: int = 0) -> dict:
    conf = {**TEST_CONF, "spark.executor.memory": "768m", "spark.executor.cores": "1", "spark.cores.max": "2",
            # A task waits this long for its executor when that one is busy before running
            # elsewhere: the 3 s default is too short on a loaded machine (moves).
            "spark.locality.wait.process": "60s"}
    script = textwrap.dedent(DRIVER.format(tests=TESTS, tools=str(ROOT / "tools"), master=cluster.master_url, conf=conf, root=str(root),
                                           batches=batches, kill_at=kill_at, standbys=standbys))
    (root / "driver").mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=1200,
                          cwd=root / "driver", env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    if done.returncode:
        raise AssertionError(f"driver failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_stateful_tasks_stay_on_their_executor(cluster, tmp_path):
    result = run_driver(cluster, tmp_path / "app", BATCHES)
    assert result["output"] == result["expected"]
    assert result["store"] == result["expected"]
    placement = result["placement"]
    tasks = placement["executors"]
    assert len(tasks) == 4 and len(set(tasks.values())) == 2, tasks   # spread over both executors
    # every run but each task's first has a previous run
    with_previous = placement["task_runs"] - len(tasks)
    assert with_previous >= 4 * (BATCHES - 1)
    assert placement["on_previous_executor"] >= STAY_SHARE * with_previous, placement
    assert placement["moves"] == 0, placement
    assert all(p["restored_records"] == 0 for p in placement["passes"] if not p["moved"]), placement["passes"]
    # each task reports its own executor, the one placement recorded
    assert {task: m["executor"] for task, m in result["tasks"].items() if "executor" in m} == tasks


@pytest.mark.skipif(not os.environ.get("CLUSTER_TEST_LONG"), reason="long: make cluster-test")
def test_tasks_of_a_killed_executor_move_once(cluster, tmp_path):
    result = run_driver(cluster, tmp_path / "app", BATCHES + 2, kill_at=2)
    assert result["output"] == result["expected"]
    assert result["store"] == result["expected"]
    placement = result["placement"]
    moved = [task for p in placement["passes"] for task in p["moved"]]
    # the killed executor's tasks moved, each once, and stayed
    assert moved and len(moved) == len(set(moved)), placement["passes"]
    assert "1_0" in moved
    assert all(executor != result["killed"] for executor in placement["executors"].values())
    after = [p for p in placement["passes"] if p["batch"] > 2]
    assert not any(p["moved"] for p in after), placement["passes"]


@pytest.mark.skipif(not os.environ.get("CLUSTER_TEST_LONG"), reason="long: make cluster-test")
def test_a_killed_executors_task_moves_onto_its_standby_and_catches_up_at_most_a_batch(cluster, tmp_path):
    kill_at = 3
    result = run_driver(cluster, tmp_path / "app", kill_at + 2, kill_at=kill_at, standbys=1)
    assert result["output"] == result["expected"]
    assert result["store"] == result["expected"]
    # before the kill: task 1_0 had a standby on the other executor, caught up
    # (process_available() returns once the round after its last batch is done)
    at_kill = result["standbys_at_kill"]
    assert at_kill["replicas"] == 1 and at_kill["rounds"] >= kill_at, at_kill
    (standby,) = at_kill["tasks"]["1_0"]
    assert standby["executor"] != result["killed"] and standby["lag"] == 0, at_kill
    # the task moved once, onto that standby, and restored at most one batch of its changelog
    # (without it: everything 1_0 logged in the batches before the kill)
    moves = [m for m in result["placement"]["moved_tasks"] if m["task"] == "1_0"]
    assert len(moves) == 1 and moves[0]["onto_standby"] and moves[0]["to"] == standby["executor"], moves
    one_batch = max(result["changelog_records"][:kill_at])
    assert moves[0]["restored_records"] <= one_batch < sum(result["changelog_records"][:kill_at]), \
        (moves, result["changelog_records"])
    assert all(executor != result["killed"] for executor in result["placement"]["executors"].values())
