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
import time
from typing import Callable, Optional

import pytest

MINUTES = float(os.environ.get("PARITY_MINUTES", "0"))
_started: Optional[float] = None


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
        runs to the end."""
        inner = test.hypothesis.inner_test

        @functools.wraps(inner)
        def watched(*args, **kwargs):
            self.new_case()
            self.cases += 1
            try:
                return inner(*args, **kwargs)
            except TimeUp:
                raise
            except BaseException:
                self.failed = True
                raise
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
