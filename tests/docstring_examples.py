"""The docstring examples of streamlib's modules, for tests/unit and tests/spark."""
from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re

import streamlib

ALL_MODULES = sorted(info.name for info in pkgutil.walk_packages(streamlib.__path__, "streamlib.")
                     if not info.name.endswith("__main__"))
#: an example line that starts (or uses) a SparkSession
_SPARK_EXAMPLE = re.compile(r">>> .*(SparkSession|get_or_create_session|\bspark\.)")


def needs_spark(name: str) -> bool:
    """Whether a module's examples start or use a SparkSession (a JVM)."""
    try:
        source = inspect.getsource(importlib.import_module(name))
    except OSError:   # a module without source text (an empty package)
        return False
    return bool(_SPARK_EXAMPLE.search(source))


def run_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
