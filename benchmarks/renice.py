"""An experiment of ``query_bench.py --spark-nice``: the query endpoint's share of the
cores beside the local Spark JVM the bench started.

On a machine with few cores, the Spark JVM of ``local[N]`` (the tasks, and the Python
workers it starts) runs at the driver's priority, so while a batch runs the driver's
threads wait for a core: a lookup's bytes reach a polling thread 20-40 ms late, and a
thread holding the GIL waits for a core with every other thread of the driver behind
it (``benchmarks/query_bench.py --trace``). ``--spark-nice N`` adds N to the JVM's nice
value: the driver's threads, the endpoint's among them, are given the cores first, the
JVM everything they leave. Not a library setting: a library does not change the
priority of processes it did not start (README, issue 43).

Linux only (``/proc``). Raising a nice value needs no privilege, lowering it back does.
"""
from __future__ import annotations

import logging
import os
from typing import Iterable

log = logging.getLogger("streamlib.query")

#: child processes already reniced (pid -> their start time, so a reused pid is not skipped)
_reniced: dict[int, str] = {}


def renice_children(by: int, names: Iterable[str] = ("java",)) -> int:
    """Adds ``by`` to the nice value of every thread of this process's child processes
    named one of ``names`` (``/proc/<pid>/comm``), once per child; the threads changed."""
    if by <= 0 or not os.path.isdir("/proc/self/task"):
        return 0
    wanted, me, changed = set(names), str(os.getpid()), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/comm") as f:
                name = f.read().strip()
        except OSError:   # gone meanwhile
            continue
        parent, started = fields[1], fields[19]
        if parent != me or name not in wanted or _reniced.get(pid) == started:
            continue
        _reniced[pid] = started
        changed += _renice_threads(pid, by)
    return changed


def _renice_threads(pid: int, by: int) -> int:
    changed = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            nice = os.getpriority(os.PRIO_PROCESS, int(tid))
            os.setpriority(os.PRIO_PROCESS, int(tid), min(19, nice + by))
            changed += 1
        except OSError as exc:   # gone meanwhile, or not ours to change
            log.debug("query endpoint: cannot renice thread %s of %d: %s", tid, pid, exc)
    return changed
