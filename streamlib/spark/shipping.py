"""Getting the user's functions to the executors.

Spark pickles functions by reference when their module is importable on the driver;
an executor's Python worker then fails to import an application module that is not
installed there (a script's sibling module, a test module). Modules of the
topology's functions that are not installed packages are pickled by value instead.
"""
from __future__ import annotations

import sys
import sysconfig
from typing import Any, Iterator

from streamlib.spark import internals

from streamlib.node_params import param_values
from streamlib.topology import Topology

_INSTALLED = tuple({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                    sysconfig.get_paths()["stdlib"]})


def _functions(value: Any) -> Iterator[Any]:
    if callable(value):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _functions(item)


def ship_user_modules(topology: Topology) -> list[str]:
    """Register the modules defining the topology's functions for pickling by value;
    returns their names."""
    shipped = []
    for node in topology:
        for value in param_values(node.params):
            for fn in _functions(value):
                name = getattr(fn, "__module__", None)
                module = sys.modules.get(name or "")
                path = getattr(module, "__file__", None)
                if (module is None or name == "__main__" or name.split(".")[0] == "streamlib"
                        or path is None or path.startswith(_INSTALLED) or name in shipped):
                    continue
                internals.cloudpickle().register_pickle_by_value(module)
                shipped.append(name)
    return shipped
