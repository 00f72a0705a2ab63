"""``benchmarks/source_runner_bench.py`` runs: a process started as Spark starts the
streaming source runner (Spark's archives first on its path) imports our source, plans
the first batch's four input partitions, and reports each step."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "source_runner_bench.py"


def test_the_runner_bench_times_each_step_of_a_query_start():
    done = subprocess.run([sys.executable, str(BENCH), "--runs", "1", "--records", "2000"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    steps = dict(re.findall(r"^(runner import|source import|reader|offsets|partitions|whole process)\s+"
                            r"([0-9.]+) ms", done.stdout, re.MULTILINE))
    assert set(steps) == {"runner import", "source import", "reader", "offsets", "partitions", "whole process"}
    assert float(steps["whole process"]) > float(steps["runner import"]) > 0
