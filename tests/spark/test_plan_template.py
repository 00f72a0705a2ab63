"""Later micro-batches run the first batch's plan over their own rows
(``streamlib.spark.plan_template``): each batch counts its own records, never the
first batch's again; plans with per-batch parts are built every batch."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from engine import Workspace, latest_per_key, python_count, wordcount_topology
from streamlib import Serdes
from streamlib.spark.plan_template import PlanTemplate
from test_bad_input_columns import BAD, GOOD
from test_column_steps import column_wordcount

B, L = Serdes.bytes(), Serdes.long()


@pytest.fixture
def instantiated(monkeypatch):
    """The plans later batches got from a template (one entry per batch that did)."""
    made = []
    original = PlanTemplate.instantiate

    def instantiate(self, source):
        plan = original(self, source)
        if plan is not None:
            made.append(plan)
        return plan

    monkeypatch.setattr(PlanTemplate, "instantiate", instantiate)
    return made


@pytest.mark.parametrize("columns", [True, False], ids=["column-steps", "python-steps"])
def test_each_batch_counts_its_own_records(spark, tmp_path, instantiated, columns):
    """Six batches of different words in one run: a stale source in the template would
    count the first batch's words again and miss the others."""
    ws = Workspace(tmp_path)
    lines = [f"w{i} w{i} x{i % 3}" for i in range(6)]
    ws.produce("lines", [(None, line) for line in lines])
    app = ws.run(spark, column_wordcount() if columns else wordcount_topology(), max_records_per_batch=1)
    try:
        expected = dict(python_count(lines))
        assert dict(app.store("counts").all()) == expected
        assert latest_per_key(ws.read("counts-out", value_serde=L)) == expected
    finally:
        app.stop()
    assert len(instantiated) >= 4


def test_skipped_records_are_counted_in_every_batch(spark, tmp_path, instantiated):
    """The observed metric that counts undecodable rows is part of the template: each
    batch reports its own."""
    ws = Workspace(tmp_path)
    records = [(None, GOOD[0].encode()), BAD[0], (None, GOOD[1].encode()), BAD[1], BAD[2],
               (None, GOOD[2].encode())]
    ws.produce("lines", records, key_serde=B, value_serde=B)
    app = ws.run(spark, column_wordcount(), deserialization_exception_handler="log_and_continue",
                 max_records_per_batch=1)
    try:
        assert dict(app.store("counts").all()) == dict(python_count(GOOD))
        assert app.metrics()["skipped_records"] == len(BAD)
    finally:
        app.stop()
    assert instantiated


def test_a_dead_letter_handler_is_bound_to_its_batch(spark, tmp_path, instantiated):
    """Its plan is built every batch: each bad record reaches the DLQ once."""
    ws = Workspace(tmp_path)
    records = [BAD[0], (None, GOOD[0].encode()), BAD[1], (None, GOOD[1].encode()), BAD[2]]
    ws.produce("lines", records, key_serde=B, value_serde=B)
    app = ws.run(spark, column_wordcount(), deserialization_exception_handler="dead_letter",
                 max_records_per_batch=1)
    try:
        assert dict(app.store("counts").all()) == dict(python_count(GOOD[:2]))
        assert app.metrics()["dead_letter_records"] == len(BAD)
    finally:
        app.stop()
    dead = [r for p, end in sorted(ws.backend.end_offsets("app-dlq").items())
            for r in ws.backend.read("app-dlq", p, 0, end)]
    assert sorted((r.key or b"", r.value) for r in dead) == sorted((k or b"", v) for k, v in BAD)
    assert not instantiated


def test_no_template_from_a_plan_with_other_leaves(spark):
    """A plan that reads anything but its source and batch-independent relations."""
    source = spark.range(4).select(F.col("id").alias("n"))
    other = spark.createDataFrame([(9,)], "n long")
    assert PlanTemplate.capture(source.unionByName(other), source) is None
    assert PlanTemplate.capture(source.where("n > 1"), source) is not None


def test_a_template_that_fails_gives_way_to_plans_built_step_by_step(spark, tmp_path, monkeypatch, caplog):
    """Reusing the plan is an optimisation: if it fails, every batch is built anew and
    the results stay exact."""
    calls = []

    def broken(self, source):
        calls.append(1)
        raise RuntimeError("no such plan")

    monkeypatch.setattr(PlanTemplate, "instantiate", broken)
    ws = Workspace(tmp_path)
    lines = [f"v{i} v{i % 2}" for i in range(5)]
    ws.produce("lines", [(None, line) for line in lines])
    app = ws.run(spark, column_wordcount(), max_records_per_batch=1)
    try:
        assert dict(app.store("counts").all()) == dict(python_count(lines))
    finally:
        app.stop()
    assert len(calls) == 1 and "building every batch's plan anew" in caplog.text
