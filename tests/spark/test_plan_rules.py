"""The physical plan and its rules, without Spark: where each rule applies, where its
exclusions keep it out, and that leaving rules out gives the plain plan. (That a rule
never changes a result is tests/spark/test_rules_parity.py, through Spark.)"""
from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import functions as F

from streamlib import (Consumed, EmitStrategy, Materialized, Produced, Serdes, StreamsBuilder, StreamsConfig,
                       Suppressed, TimeWindows)
from streamlib.runtime.encoding import InputEncoding
from streamlib.spark.plan import PlanContext, Runner, plain_plan, plan_batch
from streamlib.spark.rules import RULES, rules_except, small_batch_reader
from streamlib.topics.spec import BackendSpec

from engine import wordcount_topology

S, L = Serdes.string(), Serdes.long()
LOCAL = BackendSpec("local:///tmp/streamlib-plan-rules")
KAFKA = BackendSpec("kafka://127.0.0.1:1")


def plan(topology, backend=LOCAL, excluded="", **config):
    return plan_batch(PlanContext(topology, StreamsConfig(**config), backend, 2), excluded)


def column_wordcount():
    builder = StreamsBuilder()
    (builder.stream("lines").flat_map_values(F.split(F.lower(F.col("value")), r"\W+"))
     .select_key(F.col("value")).group_by_key().count(materialized=Materialized.as_("counts")))
    return builder.build()


def windowed_count(suppress=False, regroup=False):
    builder = StreamsBuilder()
    stream = builder.stream("events", consumed=Consumed.with_(S, S))
    grouped = stream.group_by(lambda k, v: v) if regroup else stream.group_by_key()
    counts = grouped.windowed_by(TimeWindows.of(timedelta(seconds=10))).count(
        materialized=Materialized.as_("counts"))
    if suppress:
        counts = counts.suppress(Suppressed.until_window_closes())
    counts.to_stream().map(lambda w, n: (w.key, n)).to("out", produced=Produced.with_(S, L))
    return builder.build()


def test_the_plain_plan_runs_every_stage_in_arrow_maps_over_records():
    plain = plain_plan(PlanContext(wordcount_topology(), StreamsConfig(), LOCAL, 2))
    assert [s.runner for s in plain.stages] == [Runner.ARROW_MAP, Runner.ARROW_MAP]
    assert [s.encoding for s in plain.stages] == [InputEncoding.RECORDS] * 2
    assert [s.shuffled for s in plain.stages] == [False, True]
    assert plain.stages[0].writes and plain.stages[0].readers == 1 and plain.applied == ()


@pytest.mark.parametrize("topology", [wordcount_topology, windowed_count])
def test_leaving_out_every_rule_gives_the_plain_plan(topology):
    top = topology()
    assert plan(top, excluded="*") == plain_plan(PlanContext(top, StreamsConfig(), LOCAL, 2))


def test_python_wordcount_runs_its_split_in_the_reader_and_counts_combined_rows():
    planned = plan(wordcount_topology())
    split, count = planned.stages
    assert planned.applied == ("count_preaggregation", "reader_stage")
    assert split.runner is Runner.READER and split.combines == frozenset(count.sub.repartition_inputs)
    assert count.encoding is InputEncoding.COUNTED and count.batch_input.combined


def test_count_preaggregation_needs_a_cached_store():
    planned = plan(wordcount_topology(), cache_max_bytes=0)
    assert "count_preaggregation" not in planned.applied
    assert all(s.encoding is InputEncoding.RECORDS for s in planned.stages)


# (Column expressions need a SparkContext to be built)
def test_a_stage_of_column_chains_only_runs_no_python_and_its_rows_are_combined_by_spark(spark):
    planned = plan(column_wordcount())
    assert plan(column_wordcount(), excluded="*") == plain_plan(
        PlanContext(column_wordcount(), StreamsConfig(), LOCAL, 2))
    chains, count = planned.stages
    assert planned.applied == ("columns_only_stage", "count_preaggregation")
    assert chains.runner is Runner.NONE and chains.column_feeds
    assert not chains.combines and not count.batch_input.combined
    assert count.encoding is InputEncoding.COUNTED


def test_without_the_columns_only_rule_the_chain_stage_runs_python_and_combines(spark):
    planned = plan(column_wordcount(), excluded="columns_only_stage")
    chains, count = planned.stages
    assert chains.runner is Runner.ARROW_MAP and count.batch_input.combined


def test_the_reader_pre_aggregates_a_cached_windowed_count_on_update():
    planned = plan(windowed_count())
    assert planned.applied == ("window_count_preaggregation",)
    assert list(planned.window_counts) == ["events"]
    assert planned.stages[0].encoding is InputEncoding.WINDOW_COUNTS


@pytest.mark.parametrize("case", ["uncached", "kafka", "behind a repartition"])
def test_window_count_preaggregation_exclusions(case):
    topology = windowed_count(regroup=case == "behind a repartition")
    planned = plan(topology, backend=KAFKA if case == "kafka" else LOCAL,
                   cache_max_bytes=0 if case == "uncached" else 10 * 1024 * 1024)
    assert not planned.window_counts
    assert all(s.encoding is InputEncoding.RECORDS for s in planned.stages)


def test_the_reader_stage_is_not_for_kafka_nor_a_stateful_first_stage():
    assert "reader_stage" not in plan(wordcount_topology(), backend=KAFKA).applied
    assert "reader_stage" not in plan(windowed_count(suppress=True)).applied
    regrouped = plan(windowed_count(regroup=True))
    assert regrouped.applied == ("reader_stage",) and regrouped.stages[0].runner is Runner.READER


def test_rules_are_named_and_an_unknown_name_is_refused():
    assert len({rule.name for rule in RULES}) == len(RULES)
    with pytest.raises(ValueError, match="unknown plan rule"):
        rules_except("reader_stage,no_such_rule")


def windowed_reduce(suppress=False, emit_final=False):
    """Nexmark q7's shape: every record to one key, the highest value per window."""
    builder = StreamsBuilder()
    windowed = (builder.stream("events", consumed=Consumed.with_(S, S)).group_by(lambda k, v: "all")
                .windowed_by(TimeWindows.of(timedelta(seconds=10))))
    if emit_final:
        windowed = windowed.emit_strategy(EmitStrategy.on_window_close())
    highest = windowed.reduce(max, materialized=Materialized.as_("highest"))
    if suppress:
        highest = highest.suppress(Suppressed.until_window_closes())
    highest.to_stream().map(lambda w, v: (w.key, v)).to("out", produced=Produced.with_(S, S))
    return builder.build()


@pytest.mark.parametrize("suppress", [False, True], ids=["updates", "suppressed"])
def test_a_cached_windowed_reduce_folds_its_batches(suppress):
    planned = plan(windowed_reduce(suppress))
    assert planned.applied == ("reader_stage", "window_folds")
    assert [s.encoding for s in planned.stages] == [InputEncoding.RECORDS, InputEncoding.WINDOW_FOLDS]


@pytest.mark.parametrize("case", ["uncached", "on_window_close", "count"])
def test_window_folds_stay_out_where_records_must_go_one_by_one(case):
    if case == "count":
        planned = plan(windowed_count(regroup=True))
    elif case == "uncached":
        planned = plan(windowed_reduce(), cache_max_bytes=0)
    else:
        planned = plan(windowed_reduce(emit_final=True))
    assert "window_folds" not in planned.applied
    assert InputEncoding.WINDOW_FOLDS not in [s.encoding for s in planned.stages]


def direct_count():
    """The latency probe's topology: a count reading its topic itself."""
    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key()
     .count(materialized=Materialized.as_("c")).to_stream().to("out", produced=Produced.with_(S, L)))
    return builder.build()


@pytest.mark.parametrize("topology, config", [(direct_count, {}), (windowed_count, {"cache_max_bytes": 0})],
                         ids=["count", "uncached-windowed-count"])
def test_a_small_batch_runs_a_stateful_first_stage_in_the_reader(topology, config):
    planned = plan(topology(), **config)
    assert planned.applied[-1] == "small_batch_reader"
    stage, = planned.stages
    assert stage.runner is Runner.ARROW_MAP and stage.shuffled, "a bigger batch runs the plain plan"
    assert stage.in_reader_up_to == small_batch_reader.IN_READER_RECORDS
    assert "in the reader for batches of up to 1,000 records" in planned.describe()


def test_the_small_batch_threshold_stays_within_one_read_task():
    # The read task must hold the whole batch: the source reads batches of fewer records
    # than READ_TOGETHER_RECORDS in one task.
    from streamlib.app import READ_TOGETHER_RECORDS

    assert small_batch_reader.IN_READER_RECORDS < READ_TOGETHER_RECORDS


@pytest.mark.parametrize("case", ["cluster", "kafka", "stateless first stage", "behind a repartition",
                                  "window counts", "two readers"])
def test_the_small_batch_reader_exclusions(case):
    backend, cluster, topology = LOCAL, False, direct_count()
    if case == "cluster":   # on a cluster a stateful task runs where its stores are
        cluster = True
    elif case == "kafka":
        backend = KAFKA
    elif case == "stateless first stage":
        topology = wordcount_topology()
    elif case == "behind a repartition":
        topology = windowed_count(suppress=True, regroup=True)
    elif case == "window counts":   # the reader pre-aggregates them
        topology = windowed_count()
    else:
        builder = StreamsBuilder()
        builder.stream("a", consumed=Consumed.with_(S, S)).group_by_key().count()
        builder.stream("b", consumed=Consumed.with_(S, S)).group_by_key().count()
        topology = builder.build()
    planned = plan_batch(PlanContext(topology, StreamsConfig(), backend, 2, cluster))
    assert "small_batch_reader" not in planned.applied
    assert not any(s.in_reader_up_to for s in planned.stages)


def test_only_a_local_master_is_one_executor():
    from types import SimpleNamespace

    from streamlib.spark.placement import is_cluster

    def session(master):
        return SimpleNamespace(sparkContext=SimpleNamespace(master=master))

    assert not is_cluster(session("local[2]")) and not is_cluster(session("local"))
    assert is_cluster(session("local-cluster[2,1,1024]")) and is_cluster(session("spark://host:7077"))
