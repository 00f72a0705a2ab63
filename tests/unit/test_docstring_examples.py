"""The numpydoc examples in streamlib's docstrings run, module by module (those that
start Spark: tests/spark/test_docstring_examples_spark.py)."""
from __future__ import annotations

import pytest

from docstring_examples import ALL_MODULES, needs_spark, run_examples


@pytest.mark.parametrize("name", [name for name in ALL_MODULES if not needs_spark(name)])
def test_docstring_examples(name):
    run_examples(name)
