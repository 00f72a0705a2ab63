"""The numpydoc examples in streamlib's docstrings run, module by module."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import streamlib

MODULES = sorted(info.name for info in pkgutil.walk_packages(streamlib.__path__, "streamlib.")
                 if not info.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
