"""examples/nexmark_q6: the bundled sample under the driver and the example run as a user
runs it, with spark-submit, both against the plain-Python computation of Nexmark q6."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from streamlib import Serdes, TopologyTestDriver

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "nexmark_q6" / "nexmark_q6.py"
sys.path.insert(0, str(ROOT / "benchmarks" / "nexmark"))

import generator  # noqa: E402
import reference  # noqa: E402

S, J = Serdes.string(), Serdes.json()


def _example():
    spec = importlib.util.spec_from_file_location("nexmark_q6_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sample() -> list:
    lines = EXAMPLE.parent.joinpath("data", "events.jsonl").read_text().splitlines()
    return [generator.Event(**json.loads(line)) for line in lines]


def _expected() -> dict[str, float]:
    return {seller: float(avg) for seller, avg in reference.compute("q6", _sample())}


def test_the_sample_under_the_driver_gives_each_sellers_average_of_their_last_10_auctions():
    q6 = _example()
    with TopologyTestDriver(q6.build_topology(), config=q6.streams_config()) as driver:
        inputs = {topic: driver.create_input_topic(topic, S, J) for topic in ("auction", "bid")}
        out = driver.create_output_topic(q6.OUTPUT_TOPIC, S, J)
        for event in _sample():
            if event.topic in inputs:
                inputs[event.topic].pipe_input(event.key, event.value, event.timestamp)
        table = dict(out.read_key_values_to_list())
        still_open = list(driver.get_key_value_store(q6.OPEN_AUCTIONS).all())
    expected = _expected()
    assert len(expected) > 5
    assert {seller: round(avg, 6) for seller, avg in table.items() if avg is not None} == expected
    assert still_open and all(a["expires"] >= 1_700_000_000_000 for _, a in still_open)


def test_the_example_runs_with_spark_submit(tmp_path):
    submit = Path(sys.executable).parent / "spark-submit"
    done = subprocess.run(
        [str(submit), "--master", "local[2]", str(EXAMPLE), "--bootstrap", f"local://{tmp_path / 'log'}",
         "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-3000:]
    printed = {seller: float(avg) for seller, avg in re.findall(r"^  seller (\d+)  ([\d.]+)$", done.stdout, re.M)}
    expected = _expected()
    assert printed.keys() == expected.keys()
    assert all(abs(printed[s] - expected[s]) <= 0.005 for s in expected)
    assert f"{len(expected)} sellers in nexmark-q6" in done.stdout
