"""Finding the topology an application file defines, for ``python -m streamlib describe``.

The file is imported as a module under its own name, so its ``if __name__ ==
"__main__":`` block does not run; what it defines at module level is searched for a
``Topology``, then a ``StreamsBuilder``, then a zero-argument ``build_topology()`` or
``topology()`` function.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

from .dsl import StreamsBuilder
from .topology import Topology

#: Zero-argument functions that build an application's topology, looked for in this order.
BUILDER_FUNCTIONS = ("build_topology", "topology")


class AppFileError(Exception):
    """The file cannot be imported, or defines no topology."""


def import_app_file(path: str) -> ModuleType:
    """Import ``path`` as a module named after the file (its directory first on ``sys.path``,
    so the app's sibling modules import as they do when it runs)."""
    if not os.path.isfile(path):
        raise AppFileError(f"no such file: {path}")
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    if spec is None or spec.loader is None:
        raise AppFileError(f"{path} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # dataclasses and pickling look their module up there
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise AppFileError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.pop(0)
    return module


def topologies_in(module: ModuleType) -> dict[str, Topology]:
    """The topologies ``module`` defines, by variable (or function) name."""
    names = vars(module)
    found = {name: value for name, value in names.items() if isinstance(value, Topology)}
    if found:
        return found
    found = {name: value.build() for name, value in names.items() if isinstance(value, StreamsBuilder)}
    if found:
        return found
    for name in BUILDER_FUNCTIONS:
        if callable(names.get(name)):
            return {f"{name}()": _as_topology(names[name](), name)}
    return {}


def load_topologies(path: str) -> dict[str, Topology]:
    """Import ``path`` and return its topologies; raise :class:`AppFileError` if none.

    Spark ``Column`` steps can only be built with a Spark session: if building fails
    for want of one, a local session is started and the file imported again."""
    try:
        found = _load(path)
    except AppFileError as exc:
        if not _needs_spark(exc.__cause__):
            raise
        from .spark.session import get_or_create_session
        get_or_create_session()
        found = _load(path)
    if not found:
        raise AppFileError(f"{path} defines no Topology or StreamsBuilder at module level, and no "
                           f"zero-argument function named {' or '.join(BUILDER_FUNCTIONS)}")
    return found


def _needs_spark(exc: BaseException | None) -> bool:
    """Whether ``exc`` is PySpark's bare assertion that no SparkContext is active."""
    if not isinstance(exc, AssertionError):
        return False
    tb = exc.__traceback__
    while tb is not None:
        if f"{os.sep}pyspark{os.sep}" in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


def _load(path: str) -> dict[str, Topology]:
    module = import_app_file(path)
    try:
        return topologies_in(module)
    except Exception as exc:
        raise AppFileError(f"building the topology of {path} failed: {type(exc).__name__}: {exc}") from exc


def _as_topology(value: Any, function: str) -> Topology:
    if isinstance(value, StreamsBuilder):
        return value.build()
    if not isinstance(value, Topology):
        raise TypeError(f"{function}() returned {type(value).__name__}, not a Topology or StreamsBuilder")
    return value
