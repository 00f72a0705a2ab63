"""Helpers for the join tests ported from Kafka Streams (TopologyTestDriver based)."""
from __future__ import annotations


def tostring_joiner(v1, v2) -> str:
    """Kafka's MockValueJoiner.TOSTRING_JOINER: ``v1 + "+" + v2`` (Java prints null as "null")."""
    return f"{'null' if v1 is None else v1}+{'null' if v2 is None else v2}"


EXPECTED_KEYS = (0, 1, 2, 3)


def push(topic, count: int, prefix: str, timestamps=None) -> None:
    """Pipe ``count`` of Kafka's ``expectedKeys`` with values ``prefix + key``; timestamp i
    unless ``timestamps`` gives them."""
    for i in range(count):
        key = EXPECTED_KEYS[i]
        topic.pipe_input(key, f"{prefix}{key}", i if timestamps is None else timestamps[i])
