"""Differential property test, driver against Spark, over random DSL topologies.

A topology is drawn by :mod:`parity_topologies` (stateless chains, re-keying, windowed
and session aggregations with and without ``suppress``, stream–stream, stream–table,
table–table, foreign-key and global-table joins, branches and merges); its inputs are
random records on two partitions per topic (out of order, too late for their windows,
tombstones, null keys, equal timestamps); Spark processes them in one batch or in
batches of ``max_records_per_batch``, and maybe in two runs of the application on the
same workspace (stopped and started again between the two halves of the input). The
driver takes the same records in the order a task takes them (:func:`task_order`).
Output topics, stores, ``dropped_records`` and the drops per reason and node must be
equal: a table's output as its final value per key (under Spark a commit emits the
latest update per key, the driver every update: Kafka's record cache), a stream's output
as the same records in any order across partitions.

``make test`` runs the fixed examples; ``make parity-soak`` generates ``PARITY_EXAMPLES``
cases until ``PARITY_MINUTES`` after the soak's first random test (``tests/parity_budget.py``),
shrinks a failure and prints the cases tried.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Optional

import pytest
from hypothesis import HealthCheck, Phase, assume, example, given, note, settings
from hypothesis.control import currently_in_test_context
from hypothesis import strategies as st

from both_engines import Outcome
from engine import Workspace
from parity_budget import Budget, print_past_capture, timeout
from parity_topologies import (GLOBAL, KEYS, Aggregate, Branch, GlobalLookup, Merge, Src, Step, StreamJoin,
                               Table, TableJoin, TableLookup, ToTopic, Window, _next_key, build, dsl,
                               set_and_deleted, table_outputs, topologies)
from streamlib import Serdes, Streams, TopologyError, TopologyTestDriver
from streamlib.spark.plan import stage_order
from streamlib.topics.partitioner import default_partitioner
from streamlib.windowed import Window as TimeWindow, Windowed

S = Serdes.string()
PARTITIONS = 2
EXAMPLES = int(os.environ.get("PARITY_EXAMPLES", "3"))
# make test runs the fixed cases only (a random case that fails is an open finding for the
# soak, never a flaky suite); make parity-soak generates cases and shrinks a failure
SOAK = "PARITY_EXAMPLES" in os.environ
TOPICS = ("s1", "s2", "t1", "t2", GLOBAL)
tried = {"cases": 0, "spark_runs": 0, "started": time.monotonic()}
#: the random test runs until PARITY_MINUTES after the soak's first random test
budget = Budget()


def records_of(topic: str) -> st.SearchStrategy:
    """(key, value, timestamp): whole seconds plus the topic's index in ms, so two topics
    never share a timestamp (which of two records with equal timestamps in different
    topics goes first is a tie the driver, following records depth first through
    repartitions, and a task, taking a repartition topic's head first, break differently,
    as Kafka Streams' own would); within a topic timestamps repeat."""
    offset = TOPICS.index(topic)
    return st.lists(st.tuples(st.sampled_from(KEYS + KEYS + (None,)), st.sampled_from(KEYS + (None,)),
                              st.integers(0, 30).map(lambda s: s * 1000 + offset)), max_size=10)


inputs = st.fixed_dictionaries({topic: records_of(topic) for topic in TOPICS})
#: None: one batch; else max_records_per_batch
batches = st.sampled_from([None, 1, 3, 50])
#: None: one run; n: the application is stopped after the first n records of each topic
restarts = st.none() | st.integers(1, 6)


def partition_of(record: tuple) -> int:
    key, _, timestamp = record
    if key is None:     # a key-less record goes where the test puts it
        return (timestamp // 1000) % PARTITIONS
    return default_partitioner(key.encode(), PARTITIONS)


def task_order(delivery: dict[str, list[tuple]]) -> list[tuple[str, tuple]]:
    """The records of one run as a task takes them (DESIGN.md, "Time and order"): each
    partition in offset order, across partitions by the largest timestamp up to the
    record, ties to the topic, then partition, that sorts first. The global table's
    records come first: a task's replica catches up to the topic's end before a batch
    (as Kafka Streams bootstraps global tables before processing), while the driver
    applies them when piped."""
    ranked = []
    for topic in sorted(delivery):
        by_partition = [[r for r in delivery[topic] if partition_of(r) == p] for p in range(PARTITIONS)]
        for p, part in enumerate(by_partition):
            highest = -1
            for offset, record in enumerate(part):
                highest = max(highest, record[2])
                first = 0 if topic == GLOBAL else 1
                ranked.append(((first, highest, topic, p, offset), topic, record))
    return [(topic, record) for _, topic, record in sorted(ranked, key=lambda entry: entry[0])]


def deliveries(records: dict[str, list[tuple]], restart: Optional[int],
               later: bool = True) -> list[dict[str, list[tuple]]]:
    """The records of each run: all, or the first ``restart`` of each topic and then the
    rest. With ``later`` the rest is moved after the first run's largest timestamp
    (whole seconds, so topics keep their own milliseconds): under Spark a task whose
    input is all read is advanced to the application's stream time (DESIGN.md, "Time and
    order"), so a record that arrives after the application moved on may be late
    where Kafka Streams' (and the driver's) per-task stream time is not; see
    ``test_a_record_arriving_after_the_application_moved_on_is_late_under_spark``."""
    if restart is None:
        return [records]
    first = {t: rows[:restart] for t, rows in records.items()}
    shift = 0
    if later:
        shift = (max((r[2] for rows in first.values() for r in rows), default=0) // 1000 + 1) * 1000
    return [first, {t: [(k, v, ts + shift) for k, v, ts in rows[restart:]] for t, rows in records.items()}]


def run_driver(topology, outputs: dict, stores: list[str], runs: list[dict], workspace: Workspace) -> Outcome:
    with TopologyTestDriver(topology, workspace.config()) as driver:
        read = set(topology.source_topics()) | set(topology.global_stores().values())
        pipes = {t: driver.create_input_topic(t, S, S) for t in TOPICS if t in read}
        for delivery in runs:
            for topic, (key, value, timestamp) in task_order(delivery):
                if topic in pipes:
                    pipes[topic].pipe_input(key, value, timestamp)
        views = driver.get_all_state_stores()
        content = {name: dict(views[name].all()) for name in stores}
        written = {topic: [(r.key, r.value, r.timestamp, 0) for r in
                           driver.create_output_topic(topic, *serdes).read_records_to_list()]
                   for topic, serdes in outputs.items()}
        return Outcome(content, written, driver.metrics())


def run_spark(spark, build_it, outputs: dict, stores: list[str], runs: list[dict], workspace: Workspace,
              batch: Optional[int], tasks: int = 1) -> Outcome:
    """Each delivery produced, then processed by a new application on the same
    workspace (its state and checkpoint); drops summed over the runs."""
    overrides = {"num_partitions": tasks, **({"max_records_per_batch": batch} if batch else {})}
    for topic in TOPICS:
        workspace.backend.create_topic(topic, partitions=PARTITIONS, exist_ok=True)
    dropped, drops = 0, {}
    for i, delivery in enumerate(runs):
        for topic, rows in delivery.items():
            for record in rows:
                key, value, timestamp = record
                workspace.backend.produce(topic, key=S.serialize(key), value=S.serialize(value),
                                          timestamp=timestamp, partition=partition_of(record))
        workspace.backend.flush()
        app = Streams(build_it(), workspace.config(**overrides), spark=spark)
        tried["spark_runs"] += 1
        try:
            app.process_available()
            metrics = app.metrics()
            dropped += metrics["dropped_records"]
            for reason, by_node in (metrics.get("drops") or {}).items():
                for node, n in by_node.items():
                    drops.setdefault(reason, {})[node] = drops.get(reason, {}).get(node, 0) + n
            if i == len(runs) - 1:
                content = {name: dict(app.store(name).all()) for name in stores}
                written = {topic: workspace.read(topic, *serdes, with_partition=True)
                           for topic, serdes in outputs.items()}
        finally:
            app.stop()
    return Outcome(content, written, {"dropped_records": dropped, "drops": drops})


def closed_by_the_application(topology: tuple, driver: Outcome) -> dict[str, dict[str, object]]:
    """Deliberate difference (docs/semantics.md, "An idle task moves on with the
    application"; test ``test_spark_emits_the_final_result_of_a_window_the_application_closed``):
    at a batch's end Spark advances a task whose input is all read to the application's
    stream time, so a suppressed window closes and its final result is out, where the
    driver's task, whose stream time stays at its own records, keeps it open. Per
    suppressed output topic: the final results Spark may emit beyond the driver's, each
    window's value as the driver's store holds it, of windows whose end + grace the
    driver's application stream time (the largest over its tasks) passed."""
    now = driver.metrics.get("stream_time", -1)
    closed = {}
    for i, out in enumerate(topology):
        if isinstance(out, Aggregate) and out.window is not None and out.suppress:
            closed[f"out{i}"] = {f"{w.key}@{w.window.start}-{w.window.end}": value
                                 for w, value in driver.stores.get(f"store{i}", {}).items()
                                 if w.window.end + out.window.grace <= now}
    return closed


def assert_same(driver: Outcome, spark: Outcome, tables: set[str],
                closed: Optional[dict[str, dict[str, object]]] = None) -> None:
    """Equal outcomes; ``closed``: the final results Spark may emit beyond the
    driver's (:func:`closed_by_the_application`), only with the driver's value."""
    assert spark.stores == driver.stores, "stores differ"
    for topic in driver.outputs:
        if topic in tables:
            found, expected = spark.final(topic), driver.final(topic)
            for key, value in (closed or {}).get(topic, {}).items():
                if key not in expected and key in found and found[key] == value:
                    del found[key]
            assert found == expected, f"{topic} (final per key)"
        else:
            found = sorted((repr(r[:3]) for r in spark.outputs[topic]))
            expected = sorted((repr(r[:3]) for r in driver.outputs[topic]))
            assert found == expected, f"{topic} (records)"
    assert spark.metrics["drops"] == driver.metrics["drops"], "drops per reason and node"
    assert spark.metrics["dropped_records"] == driver.metrics["dropped_records"]


@pytest.fixture(scope="module", autouse=True)
def summary(request):
    # the soak's minutes (and its budget) count from this module's first test, not from
    # the session's start (collection, and other modules' tests before it)
    tried["started"] = time.monotonic()
    yield
    minutes = (time.monotonic() - tried["started"]) / 60
    line = f"parity topologies: {tried['cases']} cases tried, {tried['spark_runs']} Spark runs, {minutes:.1f} min"
    print_past_capture(request, line)


def _note(text: str) -> None:
    if currently_in_test_context():
        note(text)


def refused_by_spark(built) -> bool:
    """Known difference: Spark refuses a topology whose
    sub-topology reads what it writes itself, which the driver runs."""
    try:
        stage_order(built)
    except TopologyError:
        return True
    return False


def loses_a_table_join_delete(topology: tuple, records: dict, batch: Optional[int],
                              restart: Optional[int]) -> bool:
    """Deliberate difference (docs/semantics.md; test
    ``test_an_inner_table_join_keeps_a_result_whose_rows_both_go_in_one_later_commit``):
    with caching an inner key table–table join forwards no delete when both rows of a key
    go in one commit after their result was emitted in an earlier one, as Kafka Streams.
    Only possible with more than one commit and deletes on both sides (tombstones, or a
    filter); a left or outer join forwards the delete."""
    if batch is None and restart is None:
        return False
    return any(isinstance(out, TableJoin) and not out.foreign_key and out.kind == "join"
               and all("filter" in t.ops or any(r[1] is None for r in records[t.topic]) for t in (out.left, out.right))
               for out in topology)


def _table_value(table: Table, value: Optional[str]) -> Optional[str]:
    """A record's value as ``table`` (its topic through its steps) holds it."""
    for op in table.ops:
        value = (None if value == "b" else value) if op == "filter" else _next_key(value)
    return value


def sets_and_deletes_a_foreign_row_in_one_commit(topology: tuple, records: dict, batch: Optional[int],
                                                 restart: Optional[int]) -> bool:
    """Deliberate difference (docs/semantics.md; test
    ``test_a_foreign_key_answer_from_a_row_set_and_deleted_in_one_commit_stays``): with
    caching a right row of a foreign-key join that is set and deleted again within one
    commit is never forwarded (a record cache skips a row absent before and after, as
    Kafka's), yet a subscription answered in between saw it, so its answer stays. Only
    possible where one batch can hold the set and the delete of a right key some left row
    points to."""
    if batch == 1:
        return False
    runs = deliveries(records, restart)
    for out in topology:
        if not (isinstance(out, TableJoin) and out.foreign_key):
            continue
        foreign_keys = {_table_value(out.left, r[1]) for run in runs for r in run[out.left.topic]}
        state: dict = {}
        for run in runs:
            if set_and_deleted([(key, _table_value(out.right, value)) for key, value, _ in run[out.right.topic]
                                if key is not None and key in foreign_keys], state):
                return True
    return False


def check(spark, topology: tuple, records: dict, batch: Optional[int], restart: Optional[int],
          later: bool = True) -> None:
    if currently_in_test_context():
        built = build(topology)[0]
        assume(not refused_by_spark(built))
        assume(not loses_a_table_join_delete(topology, records, batch, restart))
        assume(not sets_and_deletes_a_foreign_row_in_one_commit(topology, records, batch, restart))
    driver, on_spark = outcomes(spark, topology, records, batch, restart, later)
    assert_same(driver, on_spark, table_outputs(topology), closed_by_the_application(topology, driver))


def outcomes(spark, topology: tuple, records: dict, batch: Optional[int], restart: Optional[int],
             later: bool = True, tasks: int = 1) -> tuple[Outcome, Outcome]:
    """The driver's and Spark's outcome of one case (Spark with ``tasks`` tasks per stage)."""
    built, outputs, stores = build(topology)
    tried["cases"] += 1
    _note(f"topology:\n{dsl(topology)}\nbatch={batch} restart={restart}")
    runs = deliveries(records, restart, later)
    with tempfile.TemporaryDirectory() as root:
        workspace = Workspace(Path(root))
        driver = run_driver(built, outputs, stores, runs, workspace)
        _note(f"driver outputs: {driver.outputs}\ndriver drops: {driver.metrics['drops']}")
        on_spark = run_spark(spark, lambda: build(topology)[0], outputs, stores, runs, workspace, batch, tasks)
        _note(f"Spark outputs: {on_spark.outputs}\nSpark drops: {on_spark.metrics['drops']}")
    return driver, on_spark


def soak_settings(test):
    # each example is one or two Spark runs (a minute on a busy 2-core machine)
    return pytest.mark.timeout(timeout(EXAMPLES, 600))(budget.ends_in_time(settings(
        max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate, Phase.shrink] if SOAK else [Phase.explicit])(test)))


@soak_settings
@given(topology=topologies, records=inputs, batch=batches, restart=restarts)
@example(topology=(Aggregate(Step(Src("s1"), "select_key"), by_value=False, op="count",
                             window=Window("hopping", 4_000, 0), suppress=True),
                   TableLookup(Branch(Src("s2"), 1), Table("t1", ("filter",)), "left_join"),
                   GlobalLookup(Merge(Src("s1"), Src("s2")), "join"),
                   TableJoin(Table("t1", ("map_values",)), Table("t2"), "outer_join")),
         records={"s1": [("a", "b", 1000), ("b", "a", 9000), ("a", "a", 2000), (None, "c", 5000), ("c", None, 7000),
                         ("b", "b", 3000)],
                  "s2": [("a", "a", 2001), ("b", "c", 4001), ("c", None, 6001), ("a", "b", 4001)],
                  "t1": [("a", "x", 3), ("b", "b", 2002), ("a", None, 5002), ("c", "a", 6002)],
                  "t2": [("b", "b-row", 3), ("c", "c-row", 4003), ("b", None, 9003)],
                  "g1": [("a", "ga", 4), ("b", "gb", 4), ("c", None, 4)]},
         batch=None, restart=None)
@example(topology=(TableJoin(Table("t1"), Table("t2", ("filter",)), "left_join", foreign_key=True),
                   StreamJoin(Step(Src("s1"), "swap"), Src("s2"), "outer_join", within=2_000, grace=3_000)),
         records={"s1": [("a", "b", 1000), ("b", "c", 6000), ("a", "a", 2000), ("c", "b", 12000)],
                  "s2": [("b", "y", 2001), ("a", "z", 9001), ("c", "y", 3001), ("b", None, 13001)],
                  "t1": [("a", "b", 1002), ("b", "c", 2002), ("a", "c", 7002), ("b", None, 8002)],
                  "t2": [("b", "b-row", 3), ("c", "c-row", 4003), ("b", None, 9003)], "g1": []},
         batch=None, restart=2)
@example(topology=(Aggregate(Merge(Src("s1"), Src("s2")), by_value=True, op="aggregate",
                             window=Window("session", 4_000, 3_000), suppress=True),
                   Aggregate(Step(Src("s1"), "flat_map"), by_value=False, op="reduce",
                             window=Window("sliding", 4_000, 0)),
                   ToTopic(Branch(Step(Src("s2"), "map_values"), 0))),
         records={"s1": [("a", "a", 1000), ("b", "b", 2000), ("a", "a", 9000), ("a", "c", 3000), ("b", None, 4000),
                         ("c", "a", 20000), ("a", "b", 8000)],
                  "s2": [("a", "a", 1001), ("c", "b", 5001), ("b", "a", 12001), ("a", "c", 4001)],
                  "t1": [], "t2": [], "g1": []},
         batch=3, restart=3)
def test_spark_matches_the_driver_on_random_topologies(spark, topology, records, batch, restart):
    check(spark, topology, records, batch, restart)


NO_RECORDS = {topic: [] for topic in TOPICS}


def test_a_foreign_key_join_of_tables_joined_on_their_keys_too(spark):
    """One sub-topology sends the foreign-key subscriptions to itself (its tasks hand
    them to each other within the batch, spark/tasks.py ``run_looping_tasks``)."""
    topology = (TableJoin(Table("t1"), Table("t2"), "join", foreign_key=True),
                TableJoin(Table("t1"), Table("t2"), "outer_join"))
    records = dict(NO_RECORDS, t1=[("a", "b", 1002)], t2=[("b", "row", 3)])
    check(spark, topology, records, batch=None, restart=None)


def test_a_grace_join_sees_every_update_of_a_table_another_join_gives_a_store(spark):
    """Found by ``make parity-soak``: the classic join gives the filtered table a store,
    cached by default, so the grace join's history got only the latest update per batch
    (``y@2``, not ``x@26002``) and answered ``s|y``, without counting ``y@2`` as older
    than the history. A node that needs every update now uncaches every table above it
    whenever the other join is added."""
    table = Table("t1", ("map_values", "filter"))
    topology = (TableLookup(Src("s1"), table, "join", grace=3000),
                TableLookup(Merge(Src("s1"), Src("s2")), table, "join", grace=0))
    records = dict(NO_RECORDS, s1=[("a", "s", 26500)], t1=[("a", "x", 26002), ("a", "y", 2)])
    driver, on_spark = outcomes(spark, topology, records, None, None)
    assert_same(driver, on_spark, table_outputs(topology))
    assert [r[:2] for r in on_spark.outputs["out0"]] == [("a", "s|x")]
    assert on_spark.metrics["drops"] == {"expired_table_version": {"KTABLE-JOINUPDATES-0000000007": 1}}


@pytest.mark.parametrize("tasks", [1, 2])
def test_a_foreign_key_join_beside_a_key_join_drops_no_response_as_stale(spark, tasks):
    """Two tables FK-joined and outer-joined on their keys; a row's foreign key changes and
    rows are deleted in a second run (with two tasks, subscriptions go from one task to
    the other). A subscription is in place before the next record looks for it: answered
    round by round over the whole batch instead, a delete in t2 answered a left row whose
    foreign key had changed since, and the answer was dropped as stale."""
    topology = (TableJoin(Table("t1"), Table("t2"), "left_join", foreign_key=True),
                TableJoin(Table("t1"), Table("t2"), "outer_join"))
    records = dict(NO_RECORDS,
                   t1=[("a", "b", 1002), ("b", "c", 2002), ("c", "a", 3002), ("a", "c", 6002), ("b", None, 7002),
                       ("c", "b", 9002)],
                   t2=[("b", "b-row", 3), ("c", "c-row", 4003), ("a", "a-row", 5003), ("b", None, 8003)])
    driver, on_spark = outcomes(spark, topology, records, batch=None, restart=2, tasks=tasks)
    assert driver.stores["store0"], "the foreign-key join found matches"
    assert_same(driver, on_spark, table_outputs(topology))


def assert_spark_keeps(driver: Outcome, on_spark: Outcome, key: str, value: str) -> None:
    """The driver's join result ends deleted, Spark's keeps ``key -> value``; no drops."""
    assert driver.final("out0") == {} and driver.stores == {"store0": {}}
    assert on_spark.final("out0") == {key: value}
    assert on_spark.stores == {"store0": {key: value}}
    assert on_spark.metrics["drops"] == driver.metrics["drops"] == {}
    assert on_spark.metrics["dropped_records"] == driver.metrics["dropped_records"] == 0


def test_an_inner_table_join_keeps_a_result_whose_rows_both_go_in_one_later_commit(spark):
    """A deliberate difference (docs/semantics.md, "Deliberate differences from
    TopologyTestDriver"): both rows of ``b`` are deleted in one commit after their join
    result was emitted in an earlier one. With caching each side's delete is forwarded at
    the commit, finds the other side already deleted, and the inner join forwards nothing
    (Kafka's KTableKTableInnerJoin returns when the other row is missing), so ``c|b-row``
    stays; the driver commits after every record and forwards the delete. Kafka Streams
    on a broker with caching and one commit per run gives Spark's result, without caching
    the driver's (tests/kafka/test_kafka_streams_caching.py)."""
    topology = (TableJoin(Table("t1"), Table("t2"), "join"),)
    records = dict(NO_RECORDS, t1=[("b", "c", 2002), ("b", None, 7002)], t2=[("b", "b-row", 3), ("b", None, 8003)])
    driver, on_spark = outcomes(spark, topology, records, batch=None, restart=1)
    assert_spark_keeps(driver, on_spark, "b", "c|b-row")


@pytest.mark.parametrize("kind", ["left_join", "outer_join"])
def test_a_left_or_outer_table_join_forwards_the_delete_when_both_rows_go_in_one_later_commit(spark, kind):
    """Unlike the inner join above (so the soak skips the inner join only): the left side's
    delete is forwarded whatever the other side holds."""
    topology = (TableJoin(Table("t1"), Table("t2"), kind),)
    records = dict(NO_RECORDS, t1=[("b", "c", 2002), ("b", None, 7002)], t2=[("b", "b-row", 3), ("b", None, 8003)])
    check(spark, topology, records, batch=None, restart=1)


def test_a_foreign_key_join_of_a_table_with_itself_drops_a_stale_answer_as_kafka_streams_does(spark):
    """``a`` is a left row and its own foreign row; its change to ``c`` sends the new left
    value and an answer computed for the old one, with one timestamp. Kafka Streams
    checks an answer against the left row as it is now, so it drops that answer as stale
    (``stale_response``): its TopologyTestDriver and an application on a broker, cached
    or not (tests/kafka/test_kafka_streams_caching.py), give ``a|a``, then the delete,
    two records dropped. Spark takes the new left value first (topic order); the driver
    applies a left value to its replica as it is written. Both give Kafka's result (the
    driver once followed the answer first and emitted ``a|c`` for a moment)."""
    topology = (TableJoin(Table("t2"), Table("t2", ("filter", "filter")), "join", foreign_key=True),)
    records = dict(NO_RECORDS, t2=[("a", "a", 6003), ("b", "b", 6003), (None, "a", 15003), ("a", "c", 12003)])
    driver, on_spark = outcomes(spark, topology, records, batch=3, restart=3)
    assert [r[:3] for r in driver.outputs["out0"]] == [("a", "a|a", 6003), ("a", None, 28003)]
    assert sum(driver.metrics["drops"]["stale_response"].values()) == 1
    assert sum(driver.metrics["drops"]["null_key"].values()) == 1
    assert driver.metrics["dropped_records"] == 2
    assert driver.stores == {"store0": {}}
    assert_same(driver, on_spark, table_outputs(topology))
    assert [r[:3] for r in on_spark.outputs["out0"]] == [("a", "a|a", 6003), ("a", None, 28003)]


def test_a_foreign_key_self_join_of_a_left_row_set_and_deleted_in_one_batch_sends_nothing(spark):
    """Found by ``make parity-soak`` (2026-11-29): t1's ``b`` is a left row
    (``t1.filter.filter``) and, mapped, a right row (``t1.filter.map_values``, whose store the
    join looks up); it is set to ``c`` and deleted in one batch. The driver emits ``b|None``
    and the delete; Kafka Streams with caching sends no subscription for a row absent
    before and after the commit and drops nothing
    (``test_a_foreign_key_self_join_of_a_row_set_and_deleted_in_one_commit_sends_nothing``).
    The sub-topology subscribes to itself, so Spark answers each update before the next,
    as the driver (``spark.tasks.run_looping_tasks``); but the result's task took both left
    values before the answers (by timestamp) and dropped the answer to ``c`` as stale. Now
    an answer to an earlier left value of the batch is taken as the driver took it
    (``fk_joins._BatchValues``): ``b|None`` replaced by the delete, nothing dropped."""
    topology = (TableJoin(Table("t1", ("filter", "filter")), Table("t1", ("filter", "map_values")), "left_join",
                          foreign_key=True),)
    records = dict(NO_RECORDS, t1=[("a", None, 8002), ("b", "c", 30002), ("b", None, 9002), (None, None, 16002)])
    driver, on_spark = outcomes(spark, topology, records, batch=50, restart=None)
    assert [r[:3] for r in driver.outputs["out0"]] == [("b", "c|None", 30002), ("b", None, 9002)]
    assert_same(driver, on_spark, table_outputs(topology))
    assert on_spark.outputs["out0"] == [] and on_spark.metrics["dropped_records"] == 1   # the null key


@pytest.mark.parametrize("second", [("c", 27002), ("a", 27002)],
                         ids=["drops", "stores"])
def test_a_foreign_key_self_join_whose_right_side_maps_the_table_first(spark, second):
    """The soak's second case of the family (2026-11-29), ``t1.filter.filter.join(
    t1.map_values.filter, foreign_key=value)``, restart after t1's first record. Its
    sub-topology subscribes to itself, so Spark runs it as the driver does, answering each
    update before the next (``spark.tasks.run_looping_tasks``). When the result's task
    took the run's left values and answers by timestamp, with ``a -> c`` first an answer
    to a's earlier value of the batch came after a's later value and was dropped as stale
    (the driver took it in between and drops nothing), and with ``a -> a`` first c's
    answers came before c's left values a, None and Spark kept ``c -> a|a`` where the
    driver's result ends empty. Now the result's task takes the left values and answers
    in the order the loop sent them, as the driver takes them (``Topology.fk_self_join_inputs``)."""
    topology = (TableJoin(Table("t1", ("filter", "filter")), Table("t1", ("map_values", "filter")), "join",
                          foreign_key=True),)
    a_value, a_time = second
    records = dict(NO_RECORDS, t1=[("c", "b", 2), ("a", a_value, a_time), ("a", "c", 10002 if a_value == "a" else 2),
                                   ("c", "a", 20002), ("c", None, 24002)])
    driver, on_spark = outcomes(spark, topology, records, batch=None, restart=1)
    assert driver.stores == {"store0": {}}
    assert_same(driver, on_spark, table_outputs(topology))


def test_a_foreign_key_self_join_drops_an_answer_sent_with_the_next_left_value(spark):
    """Found by ``make parity-soak`` (2026-11-29, 09:12 UTC): ``t1.join(t1.map_values.map_values,
    foreign_key=value)``, batches of 3. ``b -> b`` then ``b -> a`` at one timestamp: the
    second change also changes the right row ``b``, whose answer to b's subscription (for the
    left value ``b``) is sent with b's new left value. The driver takes the left value first and
    drops the answer as stale; Spark's result task takes it while ``b`` is still current (it
    waited for ``b``). Final tables equal, drops not. Now the looping stage sends a round's
    left values before its answers, in one sequence the result's task takes in that order."""
    topology = (TableJoin(Table("t1"), Table("t1", ("map_values", "map_values")), "join", foreign_key=True),)
    records = dict(NO_RECORDS, t1=[("c", "a", 23002), ("b", "b", 2), ("b", "a", 2), ("b", "a", 4002),
                                   ("c", "a", 2002), ("a", None, 16002), ("c", "c", 26002)])
    check(spark, topology, records, batch=3, restart=None)


def test_a_foreign_key_self_join_of_a_mapped_table_across_a_restart_drops_as_the_driver(spark):
    """Found by ``make parity-soak`` (2026-11-29, 09:41 UTC): ``t2.map_values.join(t2.filter,
    foreign_key=value)``, ``a`` set to a, a, c, a, a at one timestamp, a restart after two.
    The same family: which answers are stale depends on the order in which the looping
    stage sent left values and answers, which the result's task now takes as sent."""
    topology = (TableJoin(Table("t2", ("map_values",)), Table("t2", ("filter",)), "join", foreign_key=True),)
    records = dict(NO_RECORDS, t2=[("a", "a", 3), ("a", "a", 3), ("a", "c", 3), ("a", "a", 3), ("a", "a", 3)])
    check(spark, topology, records, batch=None, restart=2)


def test_a_foreign_key_answer_from_a_row_set_and_deleted_in_one_commit_stays(spark):
    """A deliberate difference (docs/semantics.md, "Deliberate differences from
    TopologyTestDriver"), found by the soak: t2's row ``a`` is set and deleted within one
    commit. The subscription of t1's ``a`` is answered in between (``a|a``), but the
    delete is never forwarded, as a record cache skips a row absent before and after the
    commit (Kafka's CachingKeyValueStore), so the answer is never retracted; the driver
    commits after every record and forwards the delete. Kafka Streams on a broker with
    caching gives Spark's result when one commit covers what the Spark batch's stage
    does (t1's records, then t2's with the subscriptions), without caching the driver's
    (tests/kafka/test_kafka_streams_caching.py)."""
    topology = (TableJoin(Table("t1", ("filter",)), Table("t2", ("filter",)), "join", foreign_key=True),)
    records = dict(NO_RECORDS, t1=[("a", "a", 24002), ("a", "a", 15002), ("a", "a", 19002), ("a", "a", 22002),
                                   ("a", "a", 18002)],
                   t2=[("a", "a", 3), ("a", "a", 3), ("a", "a", 3), ("a", "a", 28003), ("a", "a", 3), ("a", "a", 3),
                       ("a", None, 3)])
    driver, on_spark = outcomes(spark, topology, records, batch=50, restart=None)
    assert_spark_keeps(driver, on_spark, "a", "a|a")


@pytest.mark.parametrize("kind", ["join", "left_join"])
def test_a_table_join_forwards_the_delete_of_a_row_emitted_in_an_earlier_batch(spark, kind):
    topology = (TableJoin(Table("t1"), Table("t2"), kind),)
    records = dict(NO_RECORDS, t1=[("a", "x", 1002), ("a", None, 5002)], t2=[("a", "row", 3)])
    check(spark, topology, records, batch=1, restart=None)


def test_a_record_arriving_after_the_application_moved_on_is_late_under_spark(spark):
    """A deliberate difference (docs/semantics.md, "Deliberate differences from
    TopologyTestDriver"): after the first run the task of ``s2`` is caught up, so it is
    advanced to the application's stream time (20 s, from ``s1``) and its window
    [12 s, 16 s) closes (DESIGN.md, "Time and order": idle windows close). A record for
    that window written after that run is late under Spark; the driver, whose per-task
    stream time stays at 14 s, counts it."""
    window = Window("tumbling", 4_000, 0)
    topology = (Aggregate(Src("s1"), by_value=False, op="count", window=window),
                Aggregate(Src("s2"), by_value=False, op="count", window=window))
    records = dict(NO_RECORDS, s1=[("a", "x", 20_000)], s2=[("c", "c", 14_001), ("c", "c", 15_001)])
    driver, on_spark = outcomes(spark, topology, records, batch=None, restart=1, later=False)
    window_of_c = Windowed("c", TimeWindow(12_000, 16_000))
    assert driver.stores["store1"] == {window_of_c: 2}
    assert driver.outputs["out1"] == [("c@12000-16000", 1, 14_001, 0), ("c@12000-16000", 2, 15_001, 0)]
    assert driver.metrics["dropped_records"] == 0
    # Spark: the record is dropped as late and counted; everything else is the driver's
    assert on_spark.stores == dict(driver.stores, store1={window_of_c: 1})
    assert on_spark.outputs == dict(driver.outputs, out1=[("c@12000-16000", 1, 14_001, 0)])
    assert on_spark.metrics["dropped_records"] == 1
    assert list(on_spark.metrics["drops"]) == ["late"] and sum(on_spark.metrics["drops"]["late"].values()) == 1


@pytest.mark.parametrize("restart", [None, 2])
def test_spark_emits_the_final_result_of_a_window_the_application_closed(spark, restart):
    """The same deliberate difference, found by ``make parity-soak`` (2026-11-29): s2's
    task is caught up at 11.001 s while s1's reaches 30 s, so Spark advances it and the
    suppressed window [8 s, 12 s) closes and emits its final count, in one run and across
    a restart (``restart=2``: the first run gets every record, the second none). The
    driver's task never gets past 11.001 s: the window stays open in its store. The soak
    accepts exactly such a final result: the driver's stored value, of a window whose
    end + grace the application's stream time passed (:func:`closed_by_the_application`)."""
    topology = (Aggregate(Step(Src("s2"), "filter"), by_value=False, op="count", window=Window("tumbling", 4_000, 0),
                          suppress=True),
                GlobalLookup(Step(Src("s1"), "filter"), "join"))
    records = dict(NO_RECORDS, s1=[("a", "a", 30_000), ("a", "a", 0)], s2=[("a", "a", 1), ("a", "a", 11_001)])
    driver, on_spark = outcomes(spark, topology, records, batch=None, restart=restart)
    assert driver.final("out0") == {"a@0-4000": 1}
    assert driver.stores["store0"] == {Windowed("a", TimeWindow(8_000, 12_000)): 1}
    assert on_spark.final("out0") == {"a@0-4000": 1, "a@8000-12000": 1}
    closed = closed_by_the_application(topology, driver)
    assert closed == {"out0": {"a@8000-12000": 1}}
    with pytest.raises(AssertionError, match="out0"):
        assert_same(driver, on_spark, table_outputs(topology))
    assert_same(driver, on_spark, table_outputs(topology), closed)
    # only the driver's value is accepted
    wrong = dict(closed, out0={"a@8000-12000": 2})
    with pytest.raises(AssertionError, match="out0"):
        assert_same(driver, on_spark, table_outputs(topology), wrong)
