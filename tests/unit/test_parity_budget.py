"""The parity soak's time budget (tests/parity_budget.py) ends a random test on time."""
from __future__ import annotations

import time

from hypothesis import assume, given, settings
from hypothesis import strategies as st

import parity_budget


def test_a_case_rejected_by_assume_leaves_the_budget_on(monkeypatch):
    monkeypatch.setattr(parity_budget, "MINUTES", 1 / 60)    # one second
    monkeypatch.setattr(parity_budget, "_started", None)
    budget = parity_budget.Budget(share=1.0)
    cases = []

    @budget.ends_in_time
    @settings(max_examples=400, database=None, deadline=None)
    @given(st.integers())
    def random_test(n):
        cases.append(n)
        assume(n % 2 == 0)
        time.sleep(0.02)

    started = time.monotonic()
    random_test()
    assert not budget.failed
    assert time.monotonic() - started < 5  # 400 valid cases would take 8 s


def test_a_failing_case_turns_the_budget_off_so_that_its_shrinking_runs(monkeypatch):
    monkeypatch.setattr(parity_budget, "MINUTES", 1 / 60)
    monkeypatch.setattr(parity_budget, "_started", None)
    budget = parity_budget.Budget(share=1.0)

    @budget.ends_in_time
    @settings(max_examples=50, database=None, deadline=None)
    @given(st.integers())
    def random_test(n):
        assert n < 1000

    try:
        random_test()
    except AssertionError:
        pass
    assert budget.failed
