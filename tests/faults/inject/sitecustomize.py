"""Fault points for the fault harness, installed in every Python process of a run
(driver and Spark workers alike: they inherit ``PYTHONPATH`` and the environment).

With ``STREAMLIB_FAULT_POINT=<point>`` and ``STREAMLIB_FAULT_HIT=<n>``, the n-th time any
process of the run reaches ``<point>`` it SIGKILLs the driver's whole process group
(driver, JVM) and, from a Spark Python worker, the worker daemon's group too. Hits are counted across processes in a file under
``STREAMLIB_FAULT_DIR``. Points:

* ``restore``: a store copy is catching up from its changelog (after its first chunk);
* ``mid-batch``: a task starts processing its rows (other tasks may have committed);
* ``store-commit``: a task committed its stores and has not written its sinks;
* ``sink-append``: a task appended to a sink topic (maybe not to all its partitions);
* ``spark-commit``: the driver ran a batch, Spark has not committed it;
* ``executor``: a task starts processing its rows, and only its executor JVM is
  killed (with the Python workers of that executor): Spark retries the task on
  another executor, and the run goes on (``local-cluster`` only).

With ``STREAMLIB_FAULT_TRACE=<file>`` every process appends where its time goes, one
JSON line per event (``pid``, ``event``, ``at`` epoch seconds, ``seconds`` for spans):
``start`` (this module imported: a Python process is up), ``open-stores`` (a task
opened its stores, restoring them from their changelogs if needed), ``task`` (a whole
task of a batch). The harness sums these per run in its run log.
"""
import os
import time

POINT = os.environ.get("STREAMLIB_FAULT_POINT")
TRACE = os.environ.get("STREAMLIB_FAULT_TRACE")
if POINT and "STREAMLIB_FAULT_PGID" not in os.environ:
    # The first process of the run (the driver) names its group; the JVM and the Python
    # worker daemon inherit this, though the daemon runs its workers in a group of their own.
    os.environ["STREAMLIB_FAULT_PGID"] = str(os.getpgrp())


def _trace(event: str, seconds: float | None = None) -> None:
    import json

    entry = {"pid": os.getpid(), "event": event, "at": time.time()}
    if seconds is not None:
        entry["seconds"] = round(seconds, 3)
    fd = os.open(TRACE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(entry) + "\n").encode())
    finally:
        os.close(fd)


def _install_trace() -> None:
    from streamlib.spark import tasks

    def timed(function, event):
        def wrapper(*args, **kwargs):
            began = time.time()
            try:
                return function(*args, **kwargs)
            finally:
                _trace(event, time.time() - began)
        return wrapper

    # Only timing: where the task code is organised differently (a store cache that
    # keeps stores open across batches, say), the missing span is just not traced.
    # Each wrapper is a module attribute here, so cloudpickle ships it by reference (every
    # Python process installs the same): shipped by value, it would drag the wrapped
    # function and its module's globals along, the store cache's lock included.
    for function, event in (("open_task_stores", "open-stores"), ("run_task", "task")):
        if hasattr(tasks, function):
            wrapper = timed(getattr(tasks, function), event)
            wrapper.__qualname__ = wrapper.__name__ = f"traced_{function}"
            globals()[wrapper.__name__] = wrapper
            setattr(tasks, function, wrapper)


def _executor_jvm() -> int:
    """The pid of the nearest ``java`` ancestor of this process (a Python worker's executor)."""
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if name == "java":
            return pid
        pid = int(rest[1])
    raise RuntimeError("no executor JVM above this process: the executor point needs a Spark worker")


def _hit(point: str) -> None:
    if point != POINT:
        return
    fd = os.open(os.path.join(os.environ["STREAMLIB_FAULT_DIR"], f"hits-{point}"),
                 os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, b".")
        count = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if count == int(os.environ["STREAMLIB_FAULT_HIT"]):
        if point == "executor":
            jvm = _executor_jvm()
            with open(os.path.join(os.environ["STREAMLIB_FAULT_DIR"], "killed"), "w") as f:
                f.write(f"{point} {jvm}")
            os.kill(jvm, 9)
            os.killpg(os.getpgrp(), 9)  # this executor's Python workers (they die with it anyway)
        with open(os.path.join(os.environ["STREAMLIB_FAULT_DIR"], "killed"), "w") as f:
            f.write(point)
        os.killpg(int(os.environ["STREAMLIB_FAULT_PGID"]), 9)
        os.killpg(os.getpgrp(), 9)  # a Spark Python worker: its daemon's group, itself included


def _install() -> None:
    from streamlib.runtime.task import Task
    from streamlib.spark import lower, tasks
    from streamlib.state.changelog import Changelog
    from streamlib.topics.local import LocalBackend

    read = Changelog.read

    def read_then_die(self, *args, **kwargs):
        for i, chunk in enumerate(read(self, *args, **kwargs)):
            yield chunk
            if i == 0 and chunk.keys:
                _hit("restore")

    process_table = Task.process_table

    def process_then_die(self, rows, *args, **kwargs):
        _hit("mid-batch")
        _hit("executor")
        return process_table(self, rows, *args, **kwargs)

    commit = Task.commit

    def commit_then_die(self):
        commit(self)
        _hit("store-commit")

    append = LocalBackend.append

    def append_then_die(self, topic, partition, records, producer_id=None, sequence=None):
        written = append(self, topic, partition, records, producer_id, sequence)
        if not topic.endswith("-changelog"):
            _hit("sink-append")
        return written

    run = lower.BatchPlan.run

    def run_then_die(self, source, batch_id, *args, **kwargs):
        run(self, source, batch_id, *args, **kwargs)
        _hit("spark-commit")

    Changelog.read = read_then_die
    Task.process_table = process_then_die
    Task.commit = commit_then_die
    LocalBackend.append = append_then_die
    lower.BatchPlan.run = run_then_die
    assert tasks.Task is Task


if POINT:
    _install()
if TRACE:
    _trace("start")
    _install_trace()
