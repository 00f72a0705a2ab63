"""Private Spark internals live in ``streamlib/spark/internals.py`` only, and each has a
public fallback that gives the same results (issue 35, item 7)."""
from __future__ import annotations

import ast
import io
import logging
import tokenize
from pathlib import Path

import pytest

from streamlib import Serdes
from streamlib.spark import internals

ROOT = Path(__file__).resolve().parents[2]
INTERNALS = ROOT / "streamlib" / "spark" / "internals.py"
#: Names of PySpark's, Py4J's and the JVM's private surface, as code (not prose) uses them.
PRIVATE_NAMES = frozenset({
    "_jvm", "_jdf", "_jsparkSession", "_jsc", "_jc", "_jconf", "_jsq", "_jreader", "_jwrite", "_gateway",
    "_active_spark_context", "_ensure_initialized", "_to_seq", "_to_java_column", "_instantiatedSession",
    "transformUp", "setAnalyzed", "queryExecution", "observedMetrics", "LogicalRDD", "worker_main",
    "PythonEvalType", "sessionState", "newHadoopConf",
})
#: PySpark modules that are not public API, and private names of public modules.
PRIVATE_MODULES = ("pyspark.sql.classic", "pyspark.util", "pyspark.daemon", "pyspark.worker", "pyspark.serializers",
                   "pyspark.java_gateway", "pyspark.cloudpickle", "pyspark.sql.worker", "py4j")
PRIVATE_IMPORTS = frozenset({"daemon", "worker", "cloudpickle", "serializers", "java_gateway", "util"})


def private_uses(path: Path) -> list[str]:
    """Where ``path``'s code (its comments and strings aside) touches a private Spark API."""
    text = path.read_text()
    found = [f"{path.name}:{tok.start[0]}: {tok.string}"
             for tok in tokenize.generate_tokens(io.StringIO(text).readline)
             if tok.type == tokenize.NAME and tok.string in PRIVATE_NAMES]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = {alias.name for alias in node.names}
            if node.module.startswith(PRIVATE_MODULES) or (node.module == "pyspark" and names & PRIVATE_IMPORTS):
                found.append(f"{path.name}:{node.lineno}: from {node.module} import {', '.join(sorted(names))}")
        elif isinstance(node, ast.Import):
            found += [f"{path.name}:{node.lineno}: import {a.name}" for a in node.names
                      if a.name.startswith(PRIVATE_MODULES)]
    return found


def test_no_module_but_internals_touches_private_spark_apis():
    modules = [p for p in sorted((ROOT / "streamlib").rglob("*.py")) if p != INTERNALS]
    modules.append(ROOT / "_streamlib_spark_path.py")
    assert [use for path in modules for use in private_uses(path)] == []
    assert private_uses(INTERNALS), "the check finds what internals.py does use"


def test_a_missing_internal_falls_back_once_and_says_so(monkeypatch, caplog):
    monkeypatch.setattr(internals, "_broken", set())

    def gone():
        raise AttributeError("'JavaObject' has no attribute 'transformUp'")

    with caplog.at_level(logging.WARNING, logger="streamlib"):
        assert internals._attempt("example", gone, lambda: "public") == "public"
        assert internals._attempt("example", lambda: "private", lambda: "public") == "public"
    assert [r.getMessage() for r in caplog.records if "example" in r.getMessage()] != []
    assert not internals.enabled("example")


def test_spark_failing_is_not_taken_for_a_missing_internal(monkeypatch):
    monkeypatch.setattr(internals, "_broken", set())

    def fails():
        raise ValueError("a real error")

    with pytest.raises(ValueError):
        internals._attempt("example", fails, lambda: "public")
    assert internals.enabled("example")


@pytest.fixture
def internals_off(monkeypatch):
    monkeypatch.setenv(internals.SWITCH, "off")


def _frames(spark):
    from pyspark.sql import functions as F

    from streamlib.spark import exprs

    df = spark.createDataFrame([("a", 1), ("b", 2), ("a", 3)], "key string, n long")
    return {
        "selected": exprs.selected(df, ("test", "select"), lambda: [F.col("key"), (F.col("n") * 2).alias("n")]),
        "with_columns": exprs.with_columns(df, ("test", "with"), lambda: {"m": F.col("n") + 1}),
        "by_key": exprs.by_key(df, 3),
        "aggregated": exprs.aggregated(df, ("test", "agg"), lambda: ["key"],
                                       lambda: [F.sum("n").alias("total"), F.count("*").alias("rows")]),
        "arrow": internals.ArrowStage(lambda batches: batches, "key string, n long", df.columns).apply(df),
    }


def test_the_public_fallbacks_give_the_same_frames(spark, monkeypatch):
    from chispa import assert_df_equality

    private = _frames(spark)
    monkeypatch.setenv(internals.SWITCH, "off")
    public = _frames(spark)
    for name, frame in private.items():
        assert_df_equality(frame, public[name], ignore_row_order=True, ignore_nullable=True), name
    assert private["by_key"].rdd.getNumPartitions() == public["by_key"].rdd.getNumPartitions() == 3


def test_the_fallbacks_of_plans_and_metrics(spark, internals_off, tmp_path):
    from pyspark.sql import functions as F

    from streamlib.spark.plan_template import PlanTemplate

    df = spark.range(3).observe("counted", F.count("*").alias("rows"))
    df.collect()
    assert "== Physical Plan ==" in internals.plan_text(df)
    assert internals.observed_metrics(df) is None and not internals.can_read_observed_metrics(spark)
    assert PlanTemplate.capture(df, df) is None
    assert internals.on_local_files(spark, str(tmp_path)) and internals.on_local_files(spark, "file:///x")
    assert not internals.on_local_files(spark, "hdfs://namenode/x")
    assert internals.same_session(internals.session_token(spark), spark)


def test_observed_metrics_as_plain_values(spark):
    from pyspark.sql import functions as F

    df = spark.range(3).observe("counted", F.count("*").alias("rows"), F.min(F.struct("id")).alias("first"))
    df.collect()
    assert internals.observed_metrics(df) == {"counted": {"rows": 3, "first": {"id": 0}}}


def test_an_application_runs_the_same_on_public_apis_alone(spark, tmp_path, internals_off):
    from engine import Workspace, python_count
    from test_bad_input_columns import BAD, GOOD
    from test_column_steps import column_wordcount

    ws = Workspace(tmp_path)
    records = [(None, GOOD[0].encode()), BAD[0], (None, GOOD[1].encode()), BAD[2], (None, GOOD[2].encode())]
    ws.produce("lines", records, partitions=2, key_serde=Serdes.bytes(), value_serde=Serdes.bytes())
    app = ws.run(spark, column_wordcount(), deserialization_exception_handler="log_and_continue")
    try:
        assert dict(app.store("counts").all()) == dict(python_count(GOOD))
        assert app.metrics()["skipped_records"] == 2
        assert "Physical Plan" in app.explain()
    finally:
        app.stop()
