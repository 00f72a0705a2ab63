"""The docstring examples that use a SparkSession (the test session's, through ``spark``)."""
from __future__ import annotations

import pytest

from docstring_examples import ALL_MODULES, needs_spark, run_examples

SPARK_MODULES = [name for name in ALL_MODULES if needs_spark(name)]


def test_some_examples_need_spark():
    assert "streamlib.spark.plan_template" in SPARK_MODULES


@pytest.mark.parametrize("name", SPARK_MODULES)
def test_docstring_examples_with_spark(spark, name):
    run_examples(name)
