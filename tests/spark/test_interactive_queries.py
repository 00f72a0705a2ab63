"""Interactive queries on a running application, through Spark: consistent views while
batches commit, app.table() read by Spark tasks, the HTTP endpoint, local-cluster."""
from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from prometheus_client.parser import text_string_to_metric_families

from engine import Workspace
from streamlib import Consumed, Materialized, Serdes, Streams, StreamsBuilder
from streamlib.topics.base import APPEND_SCHEMA

S, L = Serdes.string(), Serdes.long()
KEYS = [f"k{i:02d}" for i in range(30)]


@pytest.fixture
def ws(tmp_path):
    return Workspace(tmp_path)


def count_topology():
    builder = StreamsBuilder()
    (builder.stream("events", consumed=Consumed.with_(S, S)).group_by_key()
     .count(materialized=Materialized.as_("counts")))
    return builder.build()


def append_round(ws: Workspace, keys: list[str]) -> None:
    """One record per key, appended as ONE frame: a batch reads all of it or none."""
    n = len(keys)
    table = pa.table([pa.array([0] * n, pa.int64()), pa.array([k.encode() for k in keys], pa.binary()),
                      pa.array([b"x"] * n, pa.binary()), pa.array([[]] * n, APPEND_SCHEMA.field("headers").type)],
                     schema=APPEND_SCHEMA)
    ws.backend.append("events", 0, table)


def wait_for(predicate, timeout: float = 240.0, what: str = "condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_views_never_show_part_of_a_batch_nor_go_back(spark, ws):
    rounds = 12   # the groups fed below
    ws.backend.create_topic("events", partitions=1)
    app = Streams(count_topology(), ws.config(num_partitions=3, commit_interval=50), spark=spark)
    app.start()
    view = app.store("counts")
    seen: list[int] = []
    errors: list[str] = []

    def feed():
        # groups of rounds, each group waited for: several batches, some of several rounds
        done = 0
        for group in (1, 2, 1, 3, 1, 4):
            for _ in range(group):
                append_round(ws, KEYS)
            done += group
            wait_for(lambda: (view.get(KEYS[-1]) or 0) >= done, what=f"{done} rounds")

    deadline = time.time() + 480   # generous: CI machines may be heavily loaded
    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        while not seen or seen[-1] < rounds:
            counts = dict(view.all())
            point = [view.get(k) for k in KEYS[::7]]
            level = counts.get(KEYS[0], 0)
            # every key counted equally often: the view holds whole rounds, from all 3 tasks
            if set(counts.values()) - {level} or (counts and set(counts) != set(KEYS)):
                errors.append(f"partial batch: {sorted(counts.items())}")
            if sum(counts.values()) % len(KEYS):
                errors.append(f"not a whole number of rounds: {sum(counts.values())}")
            if any(p is not None and p < level for p in point):
                errors.append(f"point lookups older than the scan before them: {point} < {level}")
            if seen and level < seen[-1]:
                errors.append(f"went back from {seen[-1]} to {level}")
            seen.append(max(level, *(p or 0 for p in point)))
            assert not errors, errors[:3]
            assert time.time() < deadline, f"stuck at {seen[-1]} rounds"
    finally:
        feeder.join()
        app.stop()
    tasks = {task for task in app.metrics()["tasks"] if task.startswith("0_")}
    assert tasks == {"0_0", "0_1", "0_2"}
    assert len(set(seen)) >= 3, f"queries saw too few committed states: {sorted(set(seen))}"
    assert dict(app.store("counts").all()) == {k: rounds for k in KEYS}



def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            body = response.read().decode()
            kind = response.headers["Content-Type"]
            return response.status, (json.loads(body) if "json" in kind else body)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read().decode())


def test_live_table_read_by_spark_tasks_sql_and_http_endpoint(spark, ws):
    n = 120_000
    ws.backend.create_topic("events", partitions=1)
    port = _free_port()
    app = Streams(count_topology(),
                  ws.config(num_partitions=3, commit_interval=100, application_server=f"127.0.0.1:{port}"),
                  spark=spark)
    app.start()
    try:
        append_round(ws, [f"key{i:06d}" for i in range(n)])
        append_round(ws, [f"key{i:06d}" for i in range(0, n, 3)])
        view = app.store("counts")
        wait_for(lambda: view.get(f"key{n - 3:06d}") == 2, what="the store to hold every key")
        df = app.table("counts")
        assert df.rdd.getNumPartitions() == 3          # one Spark task per store partition
        assert "streamlib-store" in df._jdf.queryExecution().executedPlan().toString() or \
            "PythonDataSource" in df._jdf.queryExecution().executedPlan().toString()
        by_count = spark.sql("SELECT value AS times, count(*) AS keys FROM counts GROUP BY value")
        expected = spark.createDataFrame([(1, n - n // 3), (2, n // 3)], "times bigint, keys bigint")
        assert_df_equality(by_count, expected, ignore_row_order=True, ignore_nullable=True)
        assert spark.sql("SELECT value FROM counts WHERE key = 'key000003'").first()[0] == 2

        # the view is live: a new batch shows in the next query of the same view
        append_round(ws, ["key000001"] * 5)
        wait_for(lambda: view.get("key000001") == 6, what="the new batch")
        wait_for(lambda: spark.sql("SELECT value FROM counts WHERE key = 'key000001'").first()[0] == 6,
                 what="the temporary view to follow")
        assert df.where("key = 'key000001'").first()["value"] == 1   # a DataFrame keeps its batch

        base = f"http://127.0.0.1:{port}"
        assert _get(f"{base}/stores") == (200, [{"name": "counts", "kind": "kv"}])
        assert _get(f"{base}/stores/counts/key000003") == (200, {"key": "key000003", "value": 2})
        assert _get(f"{base}/stores/counts?from=key000010&to=key000013") == (200, {"entries": [
            {"key": "key000010", "value": 1}, {"key": "key000011", "value": 1},
            {"key": "key000012", "value": 2}, {"key": "key000013", "value": 1}], "next": None})
        assert _get(f"{base}/stores/counts/nope")[0] == 404
        assert _get(f"{base}/stores/other/key000003")[0] == 404
        assert _get(f"{base}/stores/counts?frm=a")[0] == 400
        status, text = _get(f"{base}/metrics")
        assert status == 200 and 'streamlib_process_total{application="app"} ' in text
        records_in = float(next(line for line in text.splitlines()
                                if line.startswith("streamlib_process_total{")).rsplit(" ", 1)[1])
        assert records_in >= n + n // 3
        families = {f.name: f for f in text_string_to_metric_families(text)}
        batches = next(s.value for s in families["streamlib_batch_duration_seconds"].samples
                       if s.name.endswith("_count"))
        per_task = sum(s.value for s in families["streamlib_task_process"].samples if s.name.endswith("_total"))
        assert batches >= 2 and per_task == records_in
    finally:
        app.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{base}/stores", timeout=5)


def test_local_cluster_queries_a_store_whose_tasks_run_on_executors(local_cluster, tmp_path):
    out = local_cluster(f"""
        import os, time
        from streamlib import Consumed, Materialized, Serdes, Streams, StreamsBuilder, StreamsConfig
        from streamlib.topics import open_backend
        S = Serdes.string()
        backend = open_backend("local://{tmp_path}/log")
        backend.create_topic("events", partitions=2)
        builder = StreamsBuilder()
        builder.stream("events", consumed=Consumed.with_(S, S)).group_by_key().count(
            materialized=Materialized.as_("counts"))
        app = Streams(builder.build(), StreamsConfig(application_id="lc", bootstrap="local://{tmp_path}/log",
                      state_dir="{tmp_path}/state", commit_interval=100), spark=spark)
        app.start()
        view = app.store("counts")
        for i in range(300):
            backend.produce("events", key=b"k%d" % (i % 30), value=b"x")
        backend.flush()
        deadline = time.time() + 180
        while sum(v for _, v in view.all()) < 300:
            assert time.time() < deadline, dict(view.all())
            time.sleep(0.1)
        print("counts", sorted(set(v for _, v in view.all())), view.get("k7"))
        print("table", app.table("counts").count(), app.table("counts").rdd.getNumPartitions())
        app.stop()
        executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
        print("executors", executors)
    """)
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    assert lines["counts"] == "[10] 10"
    assert lines["table"] == "30 2"
    assert lines["executors"] == "2"
