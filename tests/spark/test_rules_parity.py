"""Each plan rule never changes a result: a property test per rule.

For random topologies of the kind a rule applies to and random records (several
partitions, out of order, too late for their window, tombstones, keys that become
null), Spark with every rule and Spark with none (``spark.streamlib.plan.excludedRules
= *``) give the same output topics, stores and ``dropped_records``, and so do Spark with
every rule in one task per stage and ``TopologyTestDriver``; Spark's runs with the
rules must have used the rule under test.

``make test`` runs each rule's fixed example; ``make rules-soak`` generates
``RULES_EXAMPLES`` more per rule (and shrinks a failure to its smallest).
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Callable, Optional

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from both_engines import Input, Outcome, assert_engines_agree, kafka_order, run_driver, run_spark
from engine import Workspace
from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder, Suppressed, TimeWindows
from streamlib.spark.plan import EXCLUDED_RULES_CONF
from streamlib.spark.rules import small_batch_reader

S, L = Serdes.string(), Serdes.long()
PARTITIONS = 2
EXAMPLES = int(os.environ.get("RULES_EXAMPLES", "2"))
SOAK = "RULES_EXAMPLES" in os.environ
OUTPUTS = {"out": (S, L)}

# keys are never None at the source (a key-less record's partition is round robin, which
# the driver cannot follow); values may be None (a tombstone) and so may the keys they
# are re-grouped by
records = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["x", "y", "z", None]),
                             st.integers(min_value=0, max_value=60_000)), min_size=1, max_size=30)
windows = st.fixed_dictionaries({"size": st.sampled_from([5_000, 10_000, 60_000]),
                                 "advance": st.sampled_from([None, 5_000]),
                                 "grace": st.sampled_from([0, 3_000, 10_000])})
batches = st.sampled_from([None, 1, 4])
LATE_CLICK = [("u1", "home", 10_000), ("u2", "home", 75_000), ("u2", "home", 30_000), ("u4", "cart", 31_000)]


def time_windows(shape: dict) -> TimeWindows:
    windows = TimeWindows.of(timedelta(milliseconds=shape["size"]), grace=timedelta(milliseconds=shape["grace"]))
    return windows.advance_by(timedelta(milliseconds=shape["advance"])) if shape["advance"] else windows


def windowed_out(counts) -> None:
    (counts.to_stream().map(lambda w, n: (f"{w.key}@{w.window.start}", n))
     .to("out", produced=Produced.with_(S, L)))


def regrouped_count(columns: bool = False):
    """Words re-keyed by their value and counted (cached): the count's repartition is
    pre-aggregated; with ``columns`` the re-keying is a Column chain (no Python stage)."""
    builder = StreamsBuilder()
    stream = builder.stream("events", consumed=Consumed.with_(S, S))
    if columns:
        from pyspark.sql import functions as F
        keyed = stream.filter(F.col("value").isNotNull()).select_key(F.upper(F.col("value")))
    else:
        keyed = stream.filter(lambda k, v: v is not None).select_key(lambda k, v: v.upper())
    keyed.group_by_key().count(materialized=Materialized.as_("counts")).to_stream().to(
        "out", produced=Produced.with_(S, L))
    return builder.build()


def direct_window_count(shape: dict):
    """A cached windowed count on update reading its topic directly."""
    builder = StreamsBuilder()
    windowed_out(builder.stream("events", consumed=Consumed.with_(S, S)).group_by_key()
                 .windowed_by(time_windows(shape)).count(materialized=Materialized.as_("counts")))
    return builder.build()


def trail(a: str, b) -> str:
    """A reduce in which any change of order shows: the last four pages, in order."""
    return f"{a}{'-' if b is None else b}"[-4:]


def regrouped_window_reduce(shape: dict, suppress: bool):
    """Nexmark q7's shape: clicks re-grouped (a Python step; a page of None leaves the
    record without a key) into a cached windowed reduce, suppressed or not; the values
    reaching the reduce may be None."""
    builder = StreamsBuilder()
    reduced = (builder.stream("events", consumed=Consumed.with_(S, S))
               .group_by(lambda user, page: None if page == "z" else "all" if user in "ab" else user)
               .windowed_by(time_windows(shape)).reduce(trail, materialized=Materialized.as_("trails")))
    if suppress:
        reduced = reduced.suppress(Suppressed.until_window_closes())
    # (a window's first value None makes its aggregate None: a tombstone, which the
    # driver, without caching, forwards and Spark's cache, as Kafka's, does not; read as
    # a table, the output is the same only if it stays a tombstone, not the text "None")
    (reduced.to_stream().map(lambda w, page: (f"{w.key}@{w.window.start}", page))
     .to("out", produced=Produced.with_(S, S)))
    return builder.build()


def direct_aggregation(shape: Optional[dict], suppress: bool):
    """The latency probe's shape, a stateful step that reads its topic itself: a cached
    count per key or, with a window ``shape``, a cached windowed reduce, suppressed or
    not (time-aware: every task runs in every batch)."""
    builder = StreamsBuilder()
    grouped = builder.stream("events", consumed=Consumed.with_(S, S)).group_by_key()
    if shape is None:
        grouped.count(materialized=Materialized.as_("counts")).to_stream().to("out", produced=Produced.with_(S, L))
        return builder.build()
    reduced = grouped.windowed_by(time_windows(shape)).reduce(trail, materialized=Materialized.as_("trails"))
    if suppress:
        reduced = reduced.suppress(Suppressed.until_window_closes())
    (reduced.to_stream().map(lambda w, page: (f"{w.key}@{w.window.start}", page))
     .to("out", produced=Produced.with_(S, S)))
    return builder.build()


def regrouped_window_count(shape: dict):
    """Clicks re-grouped by page (a Python step the reader runs) into a windowed count."""
    builder = StreamsBuilder()
    windowed_out(builder.stream("events", consumed=Consumed.with_(S, S)).map_values(lambda v: v)
                 .group_by(lambda user, page: page).windowed_by(time_windows(shape))
                 .count(materialized=Materialized.as_("counts")))
    return builder.build()


@contextmanager
def excluded_rules(spark, names: str):
    spark.conf.set(EXCLUDED_RULES_CONF, names)
    try:
        yield
    finally:
        spark.conf.unset(EXCLUDED_RULES_CONF)


def check_rule(spark, rule: str, build: Callable, events: list[tuple], batch, build_for_driver=None,
               outputs=OUTPUTS, against_driver: bool = True) -> tuple[Outcome, Outcome, Outcome]:
    """Spark with every rule = Spark with none (two tasks per stage), and Spark with
    every rule in one task per stage = the driver (which, as Kafka's, runs one task: a
    task's stream time is the largest it has seen, so two tasks may drop different
    late records, as Kafka Streams' own would); the rule applied in both. Without
    ``against_driver``, the second compares only drops (where the driver, which never
    caches, and a cached Spark may rightly differ in what they emit)."""
    inputs = [Input("events", events, partitions=PARTITIONS)]
    overrides = {"max_records_per_batch": batch} if batch else {}
    with tempfile.TemporaryDirectory() as root:
        driver = run_driver((build_for_driver or build)(), [Input("events", kafka_order(events, PARTITIONS))], outputs,
                            Workspace(Path(root) / "driver").config())
        one_task = run_spark(spark, Workspace(Path(root) / "one"), build(), inputs, outputs,
                             num_partitions=1, **overrides)
        with_rules = run_spark(spark, Workspace(Path(root) / "rules"), build(), inputs, outputs, **overrides)
        with excluded_rules(spark, "*"):
            plain = run_spark(spark, Workspace(Path(root) / "plain"), build(), inputs, outputs, **overrides)
    assert rule in with_rules.rules and rule in one_task.rules and plain.rules == ()
    if against_driver:
        assert_engines_agree(driver, one_task, outputs)
    assert_same_drops(driver, one_task)
    assert_engines_agree(plain, with_rules, outputs)
    assert_same_drops(plain, with_rules)
    return one_task, with_rules, plain


def assert_same_drops(expected: Outcome, actual: Outcome) -> None:
    assert actual.metrics["dropped_records"] == expected.metrics["dropped_records"]


def soak_settings(test):
    # each example is three Spark runs (minutes on a busy 2-core machine)
    return pytest.mark.timeout(600 * (EXAMPLES + 1))(settings(
        max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate, Phase.shrink] if SOAK else [Phase.explicit])(test))


@soak_settings
@given(events=records, batch=batches)
@example(events=[("a", "x", 5), ("b", None, 1), ("c", "y", 9), ("d", "x", 2), ("a", "z", 7)], batch=2)
def test_count_preaggregation_keeps_results(spark, events, batch):
    check_rule(spark, "count_preaggregation", regrouped_count, events, batch)


@soak_settings
@given(events=records, batch=batches)
@example(events=[("a", "x", 5), ("b", None, 1), ("c", "y", 9), ("d", "x", 2), ("a", "z", 7)], batch=None)
def test_columns_only_stage_keeps_results(spark, events, batch):
    check_rule(spark, "columns_only_stage", lambda: regrouped_count(columns=True), events, batch,
               build_for_driver=regrouped_count)


@soak_settings
@given(events=records, shape=windows, batch=batches)
@example(events=[("a", "x", 1_000), ("a", "x", 25_000), ("b", None, 26_000), ("a", "x", 2_000),
                 ("d", "x", 3_000), ("d", "y", 27_000), ("d", "x", 4_000)],
         shape={"size": 10_000, "advance": 5_000, "grace": 0}, batch=3)
def test_window_count_preaggregation_keeps_results(spark, events, shape, batch):
    check_rule(spark, "window_count_preaggregation", lambda: direct_window_count(shape), events, batch)


@soak_settings
@given(events=records, shape=windows, batch=batches)
# the late click: a 1-minute window with 10 s grace is closed at stream time 75 s, so the
# click at 30 s is dropped and counted, never added (the fixed example)
@example(events=LATE_CLICK, shape={"size": 60_000, "advance": None, "grace": 10_000}, batch=None)
def test_reader_stage_keeps_results(spark, events, shape, batch):
    check_rule(spark, "reader_stage", lambda: regrouped_window_count(shape), events, batch)


@soak_settings
@given(events=records, shape=windows, batch=batches, suppress=st.booleans())
# out of order within a window (4 s after 6 s), a late record (1 s after 75 s), a
# record re-grouped to no key (page z), a null value, both partitions
@example(events=[("a", "x", 6_000), ("c", "y", 4_000), ("b", "z", 5_000), ("d", None, 7_000),
                 ("a", "y", 75_000), ("c", "x", 1_000), ("a", "x", 12_000), ("d", "y", 76_000)],
         shape={"size": 10_000, "advance": None, "grace": 0}, batch=3, suppress=True)
# a window whose only value is None (found by the soak: it once came out as "None")
@example(events=[("d", None, 0), ("a", "x", 1_000)], shape={"size": 5_000, "advance": None, "grace": 0},
         batch=1, suppress=False)
def test_window_folds_keep_results(spark, events, shape, batch, suppress):
    # A None value into a window without one makes a None aggregate: the driver forwards
    # that update, a cached store (Spark's, Kafka's) has nothing to flush; suppressed, it
    # moves the suppression's time in the driver only, which may then emit a window
    # Spark holds back (found by the soak: [("a", "x", 0), ("a", None, 30_000)], 10 s
    # windows and grace). Plain and ruled Spark are still compared.
    check_rule(spark, "window_folds", lambda: regrouped_window_reduce(shape, suppress), events, batch,
               outputs={"out": (S, S)}, against_driver=not (suppress and any(v is None for _, v, _ in events)))


@contextmanager
def in_reader_records(limit: int):
    """Batches of at most ``limit`` records run the stage in the read task (the rule's
    threshold, read when a query plans)."""
    kept = small_batch_reader.IN_READER_RECORDS
    small_batch_reader.IN_READER_RECORDS = limit
    try:
        yield
    finally:
        small_batch_reader.IN_READER_RECORDS = kept


@soak_settings
@given(events=records, shape=st.none() | windows, suppress=st.booleans(), batch=batches,
       limit=st.sampled_from([small_batch_reader.IN_READER_RECORDS, 3]))
# the probe's count, batches of 2: every batch in the read task, or (limit 3) the
# batches alternate with the plain plan's (the stores change worker each time)
@example(events=[("a", "x", 5), ("b", None, 1), ("c", "y", 9), ("d", "x", 2), ("a", "z", 7)], shape=None,
         suppress=False, batch=2, limit=small_batch_reader.IN_READER_RECORDS)
@example(events=[("a", "x", 5), ("b", None, 1), ("c", "y", 9), ("d", "x", 2), ("a", "z", 7), ("c", "x", 3),
                 ("b", "y", 8)], shape=None, suppress=False, batch=4, limit=3)
# time-aware: out of order, a late record (1 s after 75 s), a null value, both partitions
@example(events=[("a", "x", 6_000), ("c", "y", 4_000), ("b", "z", 5_000), ("d", None, 7_000),
                 ("a", "y", 75_000), ("c", "x", 1_000), ("a", "x", 12_000), ("d", "y", 76_000)],
         shape={"size": 10_000, "advance": 5_000, "grace": 0}, suppress=True, batch=3, limit=3)
def test_small_batch_reader_keeps_results(spark, events, shape, suppress, batch, limit):
    # (suppressed, a None value moves the driver's suppression time only: see window_folds)
    with in_reader_records(limit):
        one_task, with_rules, plain = check_rule(
            spark, "small_batch_reader", lambda: direct_aggregation(shape, suppress), events, batch,
            outputs={"out": (S, L) if shape is None else (S, S)},
            against_driver=not (shape and suppress and any(v is None for _, v, _ in events)))
    assert plain.reader_passes == 0
    if limit >= len(events) or (batch and batch <= limit):   # every batch is small
        assert one_task.reader_passes and with_rules.reader_passes
