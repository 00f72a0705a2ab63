"""Finding the topology an application file defines, for ``python -m streamlib describe``.

Describing a file must never run the application in it. The file is read as a module
under its own name (so its ``if __name__ == "__main__":`` block does not run), and only
its top-level statements *before the first one that runs something* are executed: a
statement that creates ``Streams`` or ``TopologyTestDriver``, opens a topics backend,
or calls ``start``/``process_available``/``produce``/... (:data:`RUNNING_CALLS`). A call
that reaches ``Streams(...)`` or ``open_backend(...)`` some other way (a ``main()`` at
module level) stops the import there too. What was defined by then is searched for a
``Topology``, then a ``StreamsBuilder``, then a zero-argument ``build_topology()`` or
``topology()`` function. Keeping the running code under ``if __name__ == "__main__":``
is the way to make that plain.

The application id shown is the one the file sets (a ``StreamsConfig(application_id=
"...")`` anywhere in it, read from its syntax tree), unless ``--application-id`` says.
"""
from __future__ import annotations

import ast
import contextlib
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any, Iterator, Optional

from .dsl import StreamsBuilder
from .topology import Topology

#: Zero-argument functions that build an application's topology, looked for in this order.
BUILDER_FUNCTIONS = ("build_topology", "topology")


#: Names whose call runs an application (or part of it) rather than describing it:
#: constructors and functions by name, methods by attribute name.
RUNNING_CALLS = frozenset({"Streams", "TopologyTestDriver", "open_backend", "start", "process_available",
                           "await_termination", "produce", "create_topic", "pipe_input",
                           "pipe_key_value_list", "main"})


class AppFileError(Exception):
    """The file cannot be imported, or defines no topology."""


class _RunsTheApplication(BaseException):
    """Raised by the guard when the file being described starts running its application
    (a ``BaseException``, so the file's own ``except Exception`` does not swallow it)."""


def _called_name(call: ast.Call) -> Optional[str]:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _runs_something(statement: ast.stmt) -> bool:
    """Whether a top-level statement calls one of :data:`RUNNING_CALLS` (function and
    class bodies are not looked into: defining them runs nothing)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    return any(isinstance(node, ast.Call) and _called_name(node) in RUNNING_CALLS
               for node in ast.walk(statement))


def _is_main_guard(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.If) and isinstance(statement.test, ast.Compare)
            and "__name__" in ast.unparse(statement.test) and "__main__" in ast.unparse(statement.test))


def describing_part(tree: ast.Module) -> tuple[ast.Module, Optional[int]]:
    """The top-level statements of ``tree`` that describing may run, and the line where
    the first one that runs the application starts (``None``: none does)."""
    kept: list[ast.stmt] = []
    for statement in tree.body:
        if _is_main_guard(statement):
            continue
        if _runs_something(statement):
            return ast.Module(body=kept, type_ignores=[]), statement.lineno
        kept.append(statement)
    return ast.Module(body=kept, type_ignores=[]), None


def application_id_in(path: str) -> Optional[str]:
    """The ``application_id`` a file passes to ``StreamsConfig`` as a literal (or as a
    module-level string constant), ``None`` if it sets none or several different ones."""
    tree = ast.parse(_read(path), path)
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for target in node.targets if isinstance(target, ast.Name)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) == "StreamsConfig":
            for keyword in node.keywords:
                if keyword.arg != "application_id":
                    continue
                if isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
                    found.add(keyword.value.value)
                elif isinstance(keyword.value, ast.Name) and keyword.value.id in constants:
                    found.add(constants[keyword.value.id])
    return found.pop() if len(found) == 1 else None


def _read(path: str) -> str:
    if not os.path.isfile(path):
        raise AppFileError(f"no such file: {path}")
    with open(path, encoding="utf-8") as source:
        return source.read()


@contextlib.contextmanager
def _guarded() -> Iterator[None]:
    """While a file is described: creating ``Streams`` or opening a topics backend stops
    it (raises :class:`_RunsTheApplication`); what it prints goes to stderr, so that
    stdout holds the description alone."""
    from . import app, topics

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise _RunsTheApplication()

    saved = app.Streams.__init__, topics.open_backend
    app.Streams.__init__, topics.open_backend = refuse, refuse
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        app.Streams.__init__, topics.open_backend = saved


def import_app_file(path: str) -> ModuleType:
    """Import the describable part of ``path`` (:func:`describing_part`) as a module named
    after the file (its directory first on ``sys.path``, so the app's sibling modules
    import as they do when it runs)."""
    try:
        tree = ast.parse(_read(path), path)
    except SyntaxError as exc:
        raise AppFileError(f"importing {path} failed: SyntaxError: {exc}") from exc
    part, _ = describing_part(tree)
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    if spec is None:
        raise AppFileError(f"{path} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # dataclasses and pickling look their module up there
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        with _guarded():
            exec(compile(part, os.path.abspath(path), "exec"), module.__dict__)  # noqa: S102
    except _RunsTheApplication:
        pass  # a call at module level started the application: describe what is defined
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
        with _guarded():
            return topologies_in(module)
    except _RunsTheApplication:
        raise AppFileError(f"building the topology of {path} starts the application (Streams or "
                           f"open_backend): build it in a function of its own") from None
    except Exception as exc:
        raise AppFileError(f"building the topology of {path} failed: {type(exc).__name__}: {exc}") from exc


def _as_topology(value: Any, function: str) -> Topology:
    if isinstance(value, StreamsBuilder):
        return value.build()
    if not isinstance(value, Topology):
        raise TypeError(f"{function}() returned {type(value).__name__}, not a Topology or StreamsBuilder")
    return value
