"""The time budget of ``make parity-soak`` (``PARITY_MINUTES``; 0: none).

The budget counts from the soak's first random test. Once a random test's share of it is
spent, its next generated case ends the test as passed: hypothesis stops generating (a
case rejected with ``assume`` instead kept hypothesis drawing and rejecting cases until
its own limit, hundreds per case run, and a large ``PARITY_EXAMPLES`` then ran into the
module's timeout). A failure found before then is still shrunk: its replays run.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
import time
from typing import Callable, Optional

import pytest
from hypothesis.errors import StopTest, UnsatisfiedAssumption

MINUTES = float(os.environ.get("PARITY_MINUTES", "0"))
#: a soak case still running after this many seconds writes the JVMs' thread dumps
HUNG_CASE_SECONDS = float(os.environ.get("PARITY_HUNG_CASE_SECONDS", "600"))
_started: Optional[float] = None


def _java_children() -> list[int]:
    """Pids of the JVMs this process started (the SparkSession's driver)."""
    pids = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/comm") as f:
                comm = f.read().strip()
        except (OSError, IndexError, ValueError):
            continue
        if int(fields[1]) == os.getpid() and comm == "java":
            pids.append(int(entry))
    return pids


def dump_threads_of_a_hung_case() -> None:
    """Write the driver JVM's threads (``jstack``) beside the soak's output: a case
    that hung once (a Python callback blocked sending to the JVM, 25 minutes) left only
    the Python side's stacks to read."""
    for pid in _java_children():
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"parity-hung-case-jstack-{pid}-{int(time.time())}.txt")
        with open(path, "w") as out:
            subprocess.run(["jstack", "-l", str(pid)], stdout=out, stderr=subprocess.STDOUT, timeout=120)
        print(f"parity soak: a case ran over {HUNG_CASE_SECONDS:g} s; the JVM's threads: {path}",
              file=sys.__stderr__, flush=True)


class TimeUp(pytest.skip.Exception):
    """The budget is spent: a control exception hypothesis re-raises at once (as a skip)."""


def timeout(examples: int, per_example: int) -> int:
    """pytest-timeout seconds for a random test: its cases, or the budget and 20 minutes."""
    return int(MINUTES * 60) + 1200 if MINUTES else per_example * (examples + 1)


class Budget:
    """One random test's share of the budget (``share`` of ``PARITY_MINUTES``, counted
    from the soak's first random test)."""

    def __init__(self, share: float = 1.0):
        self.share = share
        self.failed = False
        #: cases run (explicit examples and shrinking replays included)
        self.cases = 0

    def elapsed(self) -> float:
        return 0.0 if _started is None else time.monotonic() - _started

    def new_case(self) -> None:
        """At the start of a case: end the test once the share is spent."""
        if MINUTES and not self.failed and self.elapsed() > self.share * MINUTES * 60:
            raise TimeUp(f"parity soak: {self.share * MINUTES:g} min spent")

    def ends_in_time(self, test: Callable) -> Callable:
        """``test`` (a hypothesis test) passes when the budget ends it, which each case
        checks first; a case that fails marks the budget failed, so that its shrinking
        runs to the end (a case rejected by ``assume`` is no failure: counted as one, the
        first rejection turned the budget off and two soaks overran it by half an hour)."""
        inner = test.hypothesis.inner_test

        @functools.wraps(inner)
        def watched(*args, **kwargs):
            self.new_case()
            self.cases += 1
            watchdog = threading.Timer(HUNG_CASE_SECONDS, dump_threads_of_a_hung_case)
            watchdog.daemon = True
            if MINUTES:
                watchdog.start()
            try:
                return inner(*args, **kwargs)
            except (TimeUp, UnsatisfiedAssumption, StopTest):
                raise  # the budget, an ``assume`` and hypothesis's own control flow: no failure
            except BaseException:
                self.failed = True
                raise
            finally:
                watchdog.cancel()
        test.hypothesis.inner_test = watched

        @functools.wraps(test)
        def run(*args, **kwargs):
            global _started
            if _started is None:
                _started = time.monotonic()
            try:
                test(*args, **kwargs)
            except TimeUp:
                pass
        return run


def print_past_capture(request, line: str) -> None:
    """Print ``line`` at the end of a module even without ``-s`` (a soak's summary)."""
    with request.config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
        print(f"\n{line}")
