"""Our TopologyTestDriver against Kafka Streams' own, record by record, caching off on
both sides, on seeded-random inputs (``tests/oracle_scenarios.py``)."""
from __future__ import annotations

import tempfile

import pytest

from oracle_driver import CASES, fast_tmpdir
from oracle_joins import GRACE_SCENARIOS, final_results
from oracle_scenarios import S, SCENARIOS, cases
from streamlib import StreamsConfig, TopologyTestDriver


def run_ours(name: str, records: list[dict]) -> list[dict]:
    scenario = SCENARIOS[name]
    driver = TopologyTestDriver(scenario.topology(), StreamsConfig(application_id="oracle"))
    try:
        inputs = {}
        out = driver.create_output_topic("out", S, scenario.out_value_serde)
        for r in records:
            topic = r.get("topic", "in")
            if topic not in inputs:
                inputs[topic] = driver.create_input_topic(topic, S, S)
            try:
                inputs[topic].pipe_input(r["key"], r["value"], r["timestamp"])
            except Exception as exc:  # Kafka Streams reports the case's first failure too
                return {"error": f"{type(exc).__name__}: {exc}"}
        return [{"key": r.key, "value": r.value, "timestamp": r.timestamp,
                 "headers": {k: v.decode() for k, v in (r.headers or {}).items()}}
                for r in out.read_records_to_list()]
    finally:
        driver.close()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_same_output_as_kafka_streams(name, oracle_results, monkeypatch):
    if fast_tmpdir():  # where the driver puts its stores
        monkeypatch.setattr(tempfile, "tempdir", fast_tmpdir())
    ours_all = [run_ours(name, case["records"]) for case in cases(name, CASES)]  # while the JVM runs
    answers = oracle_results.scenario(name)
    mismatches = []
    for case, ours in zip(cases(name, CASES), ours_all):
        theirs = answers[case["case"]]
        if isinstance(theirs, dict) or isinstance(ours, dict):  # a failure on either side
            if isinstance(theirs, dict) != isinstance(ours, dict):
                mismatches.append((case, ours, theirs))
            continue
        if name in GRACE_SCENARIOS:  # ours corrects results Kafka holds back: compare the final ones
            ours = final_results(ours)
            theirs = sorted((r["key"], r["value"], r["timestamp"]) for r in theirs)
        if ours != theirs:
            mismatches.append((case, ours, theirs))
    if mismatches:
        case, ours, theirs = min(mismatches, key=lambda m: len(m[0]["records"]))
        pytest.fail(f"{len(mismatches)}/{CASES} cases differ from Kafka Streams; the smallest:\n"
                    f"input  {case['records']}\nours   {ours}\nkafka  {theirs}")
