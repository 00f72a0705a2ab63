"""A stateful count at a large key count on a Spark standalone cluster of 1, 2 and 3
executors against ``local[2]``: produce → commit time per micro-batch, records restored
per batch, task moves; optionally with one executor SIGKILLed mid-run.

``.venv/bin/python benchmarks/cluster_bench.py [--keys 1000000] [--updates 200000]
[--batches 5] [--executors 1 2 3] [--kill-at 3]``

With ``--kill-at``, two more runs on 2 executors lose the executor running task ``1_0``
before that batch: one without standby copies, one with ``num_standby_replicas=1``.

The workload: a ``group_by(value).count()`` of 4 input partitions (a repartition, then 4
stateful tasks). Batch 0 writes every key once (the store reaches ``--keys`` keys); each
later batch updates ``--updates`` random keys. Each engine runs in its own driver process
(one SparkSession per process); the cluster (``tools/spark_cluster.py``: a master and one
1-core worker per executor, each with its own work and state directory) is started for
each run and stopped after it. The topics are on the embedded log, a path every worker of
this one machine sees. Times: from the batch's records being durable in the input topic to
``process_available()`` returning (the batch committed).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from spark_cluster import running_cluster  # noqa: E402

PARTITIONS = 4

#: The driver of one run; prints one JSON line per batch, then a summary line.
DRIVER = """
import json, random, sys, time
import pyarrow as pa
sys.path.insert(0, {tools!r})
from spark_cluster import kill_executor
from streamlib import Consumed, Materialized, Serdes, Streams, StreamsBuilder, StreamsConfig
from streamlib.spark.session import get_or_create_session
from streamlib.topics import open_backend
from streamlib.topics.base import APPEND_SCHEMA, HEADER_TYPE

master, root, executors = {master!r}, {root!r}, {executors}
spark = get_or_create_session(master, "streamlib-cluster-bench", {conf!r})
spark.sparkContext.setLogLevel("ERROR")
deadline = time.time() + 600
while executors and spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() <= executors:
    assert time.time() < deadline, "executors did not register"
    time.sleep(0.2)

builder = StreamsBuilder()
(builder.stream("keys", consumed=Consumed.with_(Serdes.string(), Serdes.string()))
 .group_by(lambda key, value: value)
 .count(materialized=Materialized.as_("counts")))
bootstrap = "local://" + root + "/log"
backend = open_backend(bootstrap)
backend.create_topic("keys", partitions={partitions}, exist_ok=True)
app = Streams(builder.build(), StreamsConfig(application_id="cluster-bench", bootstrap=bootstrap,
                                            state_dir={state_dir!r}, num_partitions={partitions},
                                            num_standby_replicas={standbys}), spark=spark)


def produce(keys):
    # one Arrow append per partition, round robin, value = the key to count
    for p in range({partitions}):
        part = keys[p::{partitions}]
        backend.append("keys", p, pa.table([pa.array([1000] * len(part), pa.int64()),
                                            pa.array([None] * len(part), pa.binary()),
                                            pa.array([k.encode() for k in part], pa.binary()),
                                            pa.array([[]] * len(part), HEADER_TYPE)], schema=APPEND_SCHEMA))


def kill_executor_of(task):
    executor = app.metrics()["placement"]["executors"][task]
    kill_executor(spark.sparkContext.applicationId, executor)
    return executor


rng = random.Random(7)
names = [f"k{{i:08d}}" for i in range({keys})]
expected = dict.fromkeys(names, 0)
for batch in range({batches}):
    killed = kill_executor_of("1_0") if batch == {kill_at} else None
    chunk = names if batch == 0 else [names[rng.randrange({keys})] for _ in range({updates})]
    for k in chunk:
        expected[k] += 1
    produce(chunk)
    start = time.perf_counter()
    app.process_available()
    seconds = time.perf_counter() - start
    placement = app.metrics().get("placement") or {{}}
    last = (placement.get("passes") or [{{}}])[-1]
    print(json.dumps({{"batch": batch, "records": len(chunk), "seconds": round(seconds, 3), "killed": killed,
                      "restored": last.get("restored_records"), "moved": last.get("moved")}}), flush=True)
store = app.store("counts")
wrong = sum(1 for k in rng.sample(names, min(2000, len(names))) if store.get(k) != expected[k])
print(json.dumps({{"summary": True, "sampled_wrong": wrong, "placement": {{
    k: v for k, v in (app.metrics().get("placement") or {{}}).items() if k != "passes"}}}}), flush=True)
app.stop()
spark.stop()
"""

BASE_CONF = {"spark.sql.shuffle.partitions": str(PARTITIONS), "spark.ui.enabled": "false",
             "spark.sql.streaming.noDataMicroBatches.enabled": "false"}


def run_driver(master: str, executors: int, root: Path, args, kill_at: int, standbys: int) -> list[dict]:
    conf = dict(BASE_CONF)
    if executors:
        conf.update({"spark.executor.memory": "1g", "spark.executor.cores": "1",
                     "spark.cores.max": str(executors), "spark.locality.wait.process": "60s"})
    # local[2]: one machine, one state directory; a cluster's workers bring their own
    state_dir = str(root / "state") if not executors else None
    script = textwrap.dedent(DRIVER.format(
        master=master, root=str(root), tools=str(ROOT / "tools"), executors=executors, conf=conf,
        partitions=PARTITIONS, state_dir=state_dir,
        keys=args.keys, updates=args.updates, batches=args.batches, kill_at=kill_at, standbys=standbys))
    # the driver's query replicas in the run's directory, not in the user's cache
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "STREAMLIB_STATE_DIR": str(root / "driver-state")}
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root,
                          env=env, timeout=args.timeout)
    if done.returncode:
        raise SystemExit(f"{master}: driver failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def describe(name: str, rows: list[dict]) -> str:
    batches = [r for r in rows if "batch" in r]
    summary = next(r for r in rows if r.get("summary"))
    later = [r["seconds"] for r in batches[1:]]
    restored = [r["restored"] for r in batches[1:] if r["restored"] is not None]
    moved = sum(len(r["moved"] or ()) for r in batches)
    return (f"| {name} | {batches[0]['seconds']:.1f} | {statistics.median(later):.2f} | {max(later):.2f} | "
            f"{max(restored) if restored else '–'} | {moved} | {summary['sampled_wrong']} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--updates", type=int, default=200_000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--executors", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--kill-at", type=int, default=3,
                        help="the batch before which 2 executors lose the one running task 1_0 (-1: no kill run)")
    parser.add_argument("--timeout", type=float, default=3600)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"{args.keys} keys, {args.updates} updates per later batch, {args.batches} batches; load {load:.1f}",
          flush=True)
    runs = [("local[2]", 0, -1, 0)] + [(f"{n} executor{'s' * (n > 1)}", n, -1, 0) for n in args.executors]
    if args.kill_at >= 0:
        runs += [(f"2 executors, one killed before batch {args.kill_at}", 2, args.kill_at, 0),
                 (f"2 executors, 1 standby, one killed before batch {args.kill_at}", 2, args.kill_at, 1)]
    table = ["| run | first batch (s) | later batches, median (s) | max (s) | restored per later batch, max |"
             " task moves | wrong of 2000 sampled keys |", "|---|---|---|---|---|---|---|"]
    for name, executors, kill_at, standbys in runs:
        with tempfile.TemporaryDirectory(prefix="cluster-bench-") as tmp:
            root = Path(tmp)
            started = time.time()
            if executors:
                with running_cluster(root / "cluster", workers=executors, cores=1, memory="1500m") as cluster:
                    rows = run_driver(cluster.master_url, executors, root, args, kill_at, standbys)
            else:
                rows = run_driver("local[2]", 0, root, args, kill_at, standbys)
        for row in rows:
            print(f"  {name}: {json.dumps(row)}", flush=True)
        table.append(describe(name, rows))
        print(f"{name}: {time.time() - started:.0f} s in all, load {os.getloadavg()[0]:.1f}", flush=True)
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
