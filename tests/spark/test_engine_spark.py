"""The core engine through Spark: wordcount, tables, caching, restarts, lost state."""
from __future__ import annotations

import random

import pytest

from streamlib import Consumed, Materialized, Serdes, StreamsBuilder, TopologyTestDriver
from engine import Workspace, latest_per_key, python_count, wordcount_topology

VOCABULARY = [f"w{i:04d}" for i in range(3000)] + ["Hello", "hello", "HELLO", "world"]


def random_lines(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(0, 20))) + rng.choice(".,!? ")
            for _ in range(n)]


@pytest.fixture
def ws(tmp_path):
    return Workspace(tmp_path)


def test_wordcount_equals_python_count_on_megabytes_of_text(spark, ws):
    lines = random_lines(40_000)  # ~2.5 MB
    ws.produce("lines", [(None, line) for line in lines], partitions=4)
    app = ws.run(spark, wordcount_topology())
    expected = python_count(lines)
    assert dict(app.store("counts").all()) == dict(expected)
    assert latest_per_key(ws.read("counts-out", value_serde=Serdes.long())) == dict(expected)
    assert app.metrics()["records_in"] == len(lines) + sum(expected.values())
    assert app.store("counts").get("hello") == expected["hello"]
    app.stop()


def test_restart_continues_counting_and_lost_state_is_restored(spark, ws):
    first, second, third = random_lines(3000, 2), random_lines(3000, 3), random_lines(3000, 4)
    ws.produce("lines", [(None, line) for line in first], partitions=2)
    ws.run(spark, wordcount_topology()).stop()

    ws.produce("lines", [(None, line) for line in second], partitions=2)
    app = ws.run(spark, wordcount_topology())
    assert dict(app.store("counts").all()) == dict(python_count(first + second))
    app.cleanup()  # delete local state: the next run restores it from the changelog

    ws.produce("lines", [(None, line) for line in third], partitions=2)
    app = ws.run(spark, wordcount_topology())
    expected = dict(python_count(first + second + third))
    assert dict(app.store("counts").all()) == expected
    assert app.metrics()["restored_records"] > 0
    assert latest_per_key(ws.read("counts-out", value_serde=Serdes.long())) == expected
    app.stop()


def test_table_from_topic_with_updates_and_tombstones(spark, ws):
    ws.produce("users", [("a", "1", 10), ("b", "2", 11), ("a", "3", 12), ("c", "4", 13),
                         ("b", None, 14), ("d", "5", 15), ("d", None, 16)], partitions=2)
    builder = StreamsBuilder()
    table = builder.table("users", consumed=Consumed.with_(Serdes.string(), Serdes.string()),
                          materialized=Materialized.as_("users-store"))
    table.to_stream().to("users-out")
    app = ws.run(spark, builder.build())
    assert dict(app.store("users-store").all()) == {"a": "3", "c": "4"}
    # With caching (the default), one commit forwards the latest change per key, and a
    # key created and deleted in the same commit (b, d) is not forwarded at all.
    out = sorted(ws.read("users-out"), key=lambda r: r[0])
    assert out == [("a", "3", 12), ("c", "4", 13)]
    app.stop()


def test_cache_disabled_emits_every_update_like_the_test_driver(spark, ws):
    lines = random_lines(300, 5)
    records = [(None, line, 1000 + i) for i, line in enumerate(lines)]
    ws.produce("lines", records, partitions=1)
    app = ws.run(spark, wordcount_topology(), cache_max_bytes=0, num_partitions=3)
    spark_out = ws.read("counts-out", value_serde=Serdes.long())
    app.stop()

    driver = TopologyTestDriver(wordcount_topology())
    source = driver.create_input_topic("lines", Serdes.string(), Serdes.string())
    for _, line, ts in records:
        source.pipe_input(None, line, ts)
    driver_out = [(r.key, r.value, r.timestamp) for r in
                  driver.create_output_topic("counts-out", Serdes.string(), Serdes.long())
                  .read_records_to_list()]
    driver.close()
    assert len(spark_out) == len(driver_out)

    def per_key(records):
        grouped = {}
        for key, value, ts in records:
            grouped.setdefault(key, []).append((value, ts))
        return grouped

    assert per_key(spark_out) == per_key(driver_out)


def test_user_function_error_names_topic_partition_offset(spark, ws):
    ws.produce("lines", [(None, "fine"), (None, "boom"), (None, "never")], partitions=1)

    def explode(value):
        if value == "boom":
            raise ValueError("cannot handle boom")
        return value

    builder = StreamsBuilder()
    builder.stream("lines").map_values(explode).to("out")
    with pytest.raises(Exception) as failure:
        ws.run(spark, builder.build())
    message = str(failure.value)
    assert "cannot handle boom" in message
    assert "topic 'lines' partition 0 offset 1" in message
    assert "KSTREAM-MAPVALUES" in message


def test_keys_stay_in_their_task_when_batch_sizes_change(spark, ws):
    # A big batch spreads keys over every task; a tiny batch must send each key to
    # the same task again, whatever Spark's adaptive execution would coalesce.
    big, tiny = random_lines(4000, 9), ["w0001 w0002 w0003 w0004 w0005 w0006 w0007 w0008 hello world"]
    min_size = "spark.sql.adaptive.coalescePartitions.minPartitionSize"
    ws.produce("lines", [(None, line) for line in big], partitions=4)
    spark.conf.set(min_size, "1")  # Spark would not coalesce the big batch's partitions
    try:
        ws.run(spark, wordcount_topology()).stop()
    finally:
        spark.conf.unset(min_size)
    ws.produce("lines", [(None, line) for line in tiny], partitions=4)
    app = ws.run(spark, wordcount_topology())
    stored = list(app.store("counts").all())
    assert len(stored) == len({k for k, _ in stored}), "each key lives in exactly one task's store"
    assert dict(stored) == dict(python_count(big + tiny))
    app.stop()


def test_each_stage_function_is_pickled_once_and_takes_its_batch_from_the_job(spark, ws, monkeypatch):
    # Several micro-batches, one UDF per stage made at the first: each batch's tasks read
    # their batch id from the job's local property, which orders the sinks' appends.
    from streamlib.spark import internals

    made = []

    def counting_udf(*args, **kwargs):
        made.append(args)
        return real_udf(*args, **kwargs)

    real_udf = internals.pandas_udf
    monkeypatch.setattr(internals, "pandas_udf", counting_udf)
    lines = random_lines(600, 9)
    ws.produce("lines", [(None, line) for line in lines], partitions=2)
    app = ws.run(spark, wordcount_topology(), max_records_per_batch=100)
    assert app.metrics()["last_batch"] >= 5
    # the first stage runs in the source's reader, the count under mapInArrow
    assert app._plan.reader_stage is app._plan.stages[0]
    assert len(made) == 1
    assert dict(app.store("counts").all()) == dict(python_count(lines))
    assert latest_per_key(ws.read("counts-out", value_serde=Serdes.long())) == dict(python_count(lines))
    app.stop()


def test_a_stage_function_refuses_a_job_without_its_batch():
    from streamlib.spark.tasks import BATCH_PROPERTY, batch_of

    with pytest.raises(RuntimeError, match=BATCH_PROPERTY):
        batch_of(None)
    assert batch_of("12:1700000000000") == (12, 1_700_000_000_000)


def test_one_spark_task_per_core_runs_each_of_its_stage_tasks_on_its_own_store(spark, ws):
    # The test session is local[2] with spark.default.parallelism 2: the count's four
    # tasks run in two Spark tasks, two each, every one on its own store partition.
    lines = random_lines(2000, 5)
    ws.produce("lines", [(None, line) for line in lines], partitions=4)
    app = ws.run(spark, wordcount_topology())
    assert "Coalesce 2" in app.explain()
    counting = sorted(task for task, m in app.metrics()["tasks"].items() if m.get("stores", {}).get("counts"))
    assert len(counting) == 4
    stored = list(app.store("counts").all())
    assert len(stored) == len({k for k, _ in stored}), "each key lives in exactly one task's store"
    assert dict(stored) == dict(python_count(lines))
    assert latest_per_key(ws.read("counts-out", value_serde=Serdes.long())) == dict(python_count(lines))
    app.stop()


def test_a_small_batch_runs_a_shuffled_stage_in_one_spark_task(spark, ws):
    # A batch of at most ONE_TASK_RECORDS records runs the count's four tasks in one
    # Spark task, a bigger one in one per core; each task keeps its own store either way.
    from streamlib.spark.lower import ONE_TASK_RECORDS

    big, small = random_lines(ONE_TASK_RECORDS + 200, 6), random_lines(40, 7)
    ws.produce("lines", [(None, line) for line in big], partitions=4)
    app = ws.run(spark, wordcount_topology())
    assert "Coalesce 2" in app.explain()
    app.stop()
    ws.produce("lines", [(None, line) for line in small], partitions=4)
    app = ws.run(spark, wordcount_topology())
    assert "Coalesce 1" in app.explain() and "Coalesce 2" not in app.explain()
    stored = list(app.store("counts").all())
    assert len(stored) == len({k for k, _ in stored}), "each key lives in exactly one task's store"
    assert dict(stored) == dict(python_count(big + small))
    assert latest_per_key(ws.read("counts-out", value_serde=Serdes.long())) == dict(python_count(big + small))
    app.stop()
